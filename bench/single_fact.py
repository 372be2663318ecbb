"""Single-fact questions through ``rags-expert ask --local``, exactly as a user runs it.

The set (``bench/single_fact/``): six short documents we wrote (fictional facts, so the model cannot know
them) and 60 questions: 40 answerable (gold answer strings and the document that holds them) and 20 whose
answer is not in the knowledge base (about an absent attribute of a present subject, or an absent
subject). ``split`` halves them into dev (thresholds were tuned there) and test (reported).

For each variant (a set of ``RAGS_EXPERT_*`` settings, e.g. the ``standard`` profile as before this work)
the documents are ingested once into a private data directory with ``rags-expert ingest``, then every
question is one ``rags-expert ask --local --json`` subprocess (it starts the local model server, answers,
stops it). Reported per variant:

Scored by ``rags-expert eval``'s scoring (:mod:`rags_expert.evaluation.scoring`, gold strings as answer texts,
containment without a judge: lower case, thousands separators dropped, the answer's ``[n]`` markers removed):

* **right+cited**: answerable, exit 0, a gold string in the answer, and a cited source from the gold document;
* **right**: a gold string in a successful answer, cited or not;
* **not found**: answerable but exit 1 (the honest "could not find");
* **honest**: unanswerable and exit 1; **false success**: unanswerable and exit 0;
* **errors**: exit 2 or a crash; **s/question**: wall-clock seconds of the subprocess, median and max.

    python bench/single_fact.py [--split test|dev|all] [--variants before,attribution,evidence,fewshot,small]
        [--limit N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "bench" / "single_fact"
sys.path.insert(0, str(ROOT))

from rags_expert.evaluation.questions import Question, to_question  # noqa: E402
from rags_expert.evaluation.scoring import Reply, score_plain  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

VARIANTS: dict[str, dict[str, str]] = {
    "before": {"RAGS_EXPERT_LOCAL__PROFILE": "standard", "RAGS_EXPERT_EVIDENCE__ATTRIBUTION": "false"},
    "attribution": {"RAGS_EXPERT_LOCAL__PROFILE": "standard"},
    "evidence": {
        "RAGS_EXPERT_LOCAL__PROFILE": "small",
        "RAGS_EXPERT_EVIDENCE__EXTRACTIVE_FALLBACK": "false",
        "RAGS_EXPERT_EVIDENCE__DRAFT": "true",
    },
    "fewshot": {
        "RAGS_EXPERT_LOCAL__PROFILE": "small",
        "RAGS_EXPERT_EVIDENCE__FOCUS_SENTENCES": "3",
        "RAGS_EXPERT_PROMPTS": json.dumps(
            {"generate_small": (SET / "prompts" / "generate_small_fewshot.txt").read_text()}
        ),
    },
    "small": {"RAGS_EXPERT_LOCAL__PROFILE": "small"},
    "small-draft": {"RAGS_EXPERT_LOCAL__PROFILE": "small", "RAGS_EXPERT_EVIDENCE__DRAFT": "true"},
    "small-eager": {"RAGS_EXPERT_LOCAL__PROFILE": "small", "RAGS_EXPERT_LOCAL__START_ON_DEMAND": "false"},
    "small-norerank": {"RAGS_EXPERT_LOCAL__PROFILE": "small", "RAGS_EXPERT_RERANK__KIND": "none"},
    "small-one-search": {"RAGS_EXPERT_LOCAL__PROFILE": "small", "RAGS_EXPERT_MULTIHOP__MAX_HOPS": "1"},
}
"""before: the standard profile without attribution (what --local did before); attribution: + citations added
from the evidence; evidence: the small profile (evidence grading, focused short prompt) without the
extractive fallback; fewshot: the small profile with its former answer prompt (a few-shot example, three focus
sentences per chunk); small: the default of --local (with the fallback; one focus sentence, a short prompt);
small-norerank: the same without the evidence reranker the small profile turns on (issue 25); small-draft: the
small profile with the model's draft before the quote (``evidence.draft``, the default until issue 35 measured that
the accepted drafts restated the selector's quote); small-eager: the small profile with its model server started
with the command (``local.start_on_demand`` false, the default until a question that calls no model stopped
starting it)."""


def cli(args: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str, str, float]:
    """Run ``rags-expert ARGS``; (exit code, stdout, stderr, seconds). ``-P`` imports the checkout that ``env``'s
    PYTHONPATH names, not one in the current folder (``-m`` alone puts the current folder first: a baseline run from
    a worktree ingested with the main checkout's loaders)."""
    began = time.monotonic()
    proc = subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-P", "-m", "rags_expert.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - began


def as_question(row: dict[str, Any]) -> Question:
    """A row of the set as a question of ``rags-expert eval``: its gold strings as answer texts."""
    return to_question(
        {
            "id": row["id"],
            "question": row["question"],
            "answer": row["answers"] or None,
            "sources": [row["source"]] if row["source"] else None,
        },
        where=row["id"],
    )


def score(row: dict[str, Any], code: int, out: str) -> dict[str, Any]:
    """The outcome of one question, by the verdict of ``rags-expert eval``'s scoring (containment: no judge)."""
    result: dict[str, Any] = {"id": row["id"], "code": code, "answerable": bool(row["answers"])}
    try:
        reply = json.loads(out)
    except ValueError:
        return result | {"error": True, "answer": out[-300:]}
    meta = {k: v for k, v in reply.items() if k != "answer"}
    verdict = score_plain(as_question(row), Reply(code, str(reply.get("answer") or ""), meta))
    return result | {
        "error": verdict.verdict == "error",
        "right": verdict.verdict == "right",
        "right_cited": verdict.verdict == "right" and bool(verdict.cited_expected),
        "kind": verdict.answer_kind,
        "answer": verdict.answer[:300],
    }


def run_variant(name: str, rows: list[dict[str, Any]], base_env: dict[str, str]) -> dict[str, Any]:
    """Ingest the documents, then ask every question through the CLI with the variant's settings."""
    with tempfile.TemporaryDirectory() as data:
        env = base_env | {"RAGS_EXPERT_DATA_DIR": data} | VARIANTS[name]
        code, _, err, ingest_s = cli(["ingest", str(SET / "docs")], env)
        if code != 0:
            raise SystemExit(f"ingest failed ({code}): {err[-500:]}")
        results = []
        for row in rows:
            code, out, err, seconds = cli(["ask", "--local", "--json", row["question"]], env)
            results.append(score(row, code, out) | {"seconds": seconds})
            print(f"  {name} {row['id']} exit={code} {seconds:.1f}s {results[-1].get('answer', '')[:90]!r}", flush=True)
    return {"variant": name, "ingest_s": ingest_s, "results": results}


def summary(run: dict[str, Any]) -> dict[str, Any]:
    """The variant's rates and timings."""
    res = run["results"]
    answerable = [r for r in res if r["answerable"]]
    other = [r for r in res if not r["answerable"]]
    secs = [r["seconds"] for r in res]

    def rate(rows: list[dict[str, Any]], key: str, value: Any = True) -> float:
        return sum(r.get(key) == value for r in rows) / len(rows) if rows else 0.0

    return {
        "variant": run["variant"],
        "right_cited": rate(answerable, "right_cited"),
        "right": rate(answerable, "right"),
        "extractive": rate(answerable, "kind", "extractive"),
        "not_found": rate(answerable, "code", 1),
        "honest": rate(other, "code", 1),
        "false_success": rate(other, "code", 0),
        "errors": sum(bool(r.get("error")) for r in res),
        "median_s": statistics.median(secs) if secs else 0.0,
        "max_s": max(secs) if secs else 0.0,
        "n": f"{len(answerable)}+{len(other)}",
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of the summaries."""
    head = (
        "| variant | n (answerable+not) | right+cited | right | of which quoted | not found | honest on "
        "unanswerable | false success | errors | s/question median (max) |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {r['variant']} | {r['n']} | {r['right_cited']:.0%} | {r['right']:.0%} | {r['extractive']:.0%} | "
        f"{r['not_found']:.0%} | {r['honest']:.0%} | {r['false_success']:.0%} | {r['errors']} | "
        f"{r['median_s']:.1f} ({r['max_s']:.1f}) |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def main() -> None:
    """Parse the options, run each variant, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="test")
    parser.add_argument("--variants", default="before,attribution,evidence,fewshot,small")
    parser.add_argument("--limit", type=int, default=0, help="first N answerable and N unanswerable questions")
    parser.add_argument("--json", type=Path, help="write every answer here")
    bench_results.add_option(parser)
    args = parser.parse_args()
    rows = [json.loads(line) for line in (SET / "questions.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if args.split in ("all", r["split"])]
    if args.limit:
        rows = [r for r in rows if r["answers"]][: args.limit] + [r for r in rows if not r["answers"]][: args.limit]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    base_env |= {"PYTHONPATH": str(ROOT)}
    runs = [run_variant(name, rows, base_env) for name in args.variants.split(",")]
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    print(f"\nsplit={args.split}, {len(rows)} questions, one `rags-expert ask --local --json` per question\n")
    text = table([summary(r) for r in runs])
    print(text)
    limit = f"_first{args.limit}" if args.limit else ""
    title = f"Single-fact questions, {args.split} split (`ask --local --json` per question)"
    bench_results.record(args.record, f"single_fact_{args.split}{limit}", title, text)


if __name__ == "__main__":
    main()
