"""The corrective graph on a real local instruction model, side by side with plain RAG, on the same questions.

Issue 52: every design answers the same real-documentation questions (``bench/real_docs/``) from the same
knowledge bases with the same GGUF model (``bench/models.py``: Qwen2.5-Coder-1.5B-Instruct by default), in one run:

* ``plain``: plain RAG, the baseline corrective-RAG papers compare with: the top ``k`` chunks of
  ``rags-expert search --json`` (a subprocess), then one chat call with the ``standard`` answer prompt to a server
  of the same model that this script runs (its start is not counted), no grading, no checking. It "answers"
  (exit 0) unless its reply says the chunks do not hold the answer;
* ``small``, ``standard``, ``compact``: ``rags-expert ask --local --model-path MODEL --json`` with
  ``RAGS_EXPERT_LOCAL__PROFILE`` set to the profile (the CLI starts and stops the model server each question);
  ``--in-process`` asks through the agent's graph on one model server instead (faster for design work; its
  seconds leave out the start-up).

Scored as ``bench/real_docs.py`` scores (:mod:`rags_expert.evaluation.scoring`): right and cited, wrong given as a
success (of answerable questions), honest on unanswerable; plus model calls and prompt tokens a question (the
answer's ``usage``), and median and p90 seconds.

    python bench/models.py 1.5b                       # once: fetch the model (skipped below when absent)
    python bench/local_designs.py --split dev --limit 2 [--designs plain compact] [--in-process] [--out F.json]
    python bench/local_designs.py --report F.json --record   # the table of a saved run, into bench/results/
    python bench/local_designs.py --split dev --designs compact --env RAGS_EXPERT_EVIDENCE__MIN_CITED_SUPPORT=0 \
        --out dev.json && python bench/local_designs.py --fit dev.json   # fit evidence.min_cited_support on dev
    python bench/local_designs.py --ceiling F.json [G.json:compact=LABEL ...]   # a perfect check's bound, per kind
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import models  # noqa: E402
import real_docs as rd  # noqa: E402
import results as bench_results  # noqa: E402
from single_fact import cli  # noqa: E402

DESIGNS = ("plain", "small", "standard", "compact")
KB = Path(os.environ.get("RAGS_EXPERT_BENCH_KB", "~/.cache/rags-expert/bench-kb")).expanduser()


def plain_reply(answer: str, sources: list[dict[str, Any]], usage: dict[str, int]) -> tuple[int, dict[str, Any]]:
    """Plain RAG's reply as ``ask --json`` gives one: exit 1 when it declines, the cited hits as its sources."""
    from rags_expert.citations import cited_numbers
    from rags_expert.rag.verdict.cited import declines

    cited = cited_numbers(answer, len(sources))
    reply = {
        "answer": answer,
        "sources": [sources[n - 1] | {"n": i} for i, n in enumerate(cited, start=1)],
        "usage": {"calls": 1, **usage},
    }
    return (1 if declines(answer) or not answer.strip() else 0), reply


async def ask_plain(rows: list[dict[str, Any]], data: Path, env: dict[str, str], llm: Any, k: int) -> list[tuple]:
    """(row, exit code, reply, seconds): the top ``k`` hits of ``rags-expert search``, one answer call."""
    from langchain_core.documents import Document

    from rags_expert.llm.chat import build_chat_model
    from rags_expert.prompts import PromptStore
    from rags_expert.rag.answer.prompt import answer_messages
    from rags_expert.rag.profiles import PROFILES

    model = build_chat_model(llm)
    prompts = PromptStore()
    out = []
    for row in rows:
        began = time.monotonic()
        code, stdout, _, _ = cli(["search", "--json", "-k", str(k), row["question"]], env | rd.data_env(data))
        hits = json.loads(stdout) if code == 0 else []
        hits = hits.get("results", hits) if isinstance(hits, dict) else hits
        docs = [Document(h.get("content", ""), metadata={k: v for k, v in h.items() if k != "content"}) for h in hits]
        messages = answer_messages(prompts, PROFILES["standard"], question=row["question"], relevant=docs)
        reply = await model.ainvoke(messages)
        usage = reply.usage_metadata or {}
        sources = [{"content": d.page_content, **d.metadata} for d in docs]
        answer = str(reply.content).strip()
        exit_code, payload = plain_reply(
            answer,
            sources,
            {"input_tokens": usage.get("input_tokens", 0), "output_tokens": usage.get("output_tokens", 0)},
        )
        seconds = time.monotonic() - began
        print(f"  plain {row['id']} exit={exit_code} {seconds:.1f}s {answer[:90]!r}", flush=True)
        out.append((row, exit_code, payload, seconds))
    return out


def ask_cli(rows: list[dict[str, Any]], data: Path, env: dict[str, str], design: str, model: Path) -> list[tuple]:
    """(row, exit code, reply, seconds): one ``rags-expert ask --local --model-path --json`` per question."""
    out = []
    for row in rows:
        run_env = env | rd.data_env(data) | {"RAGS_EXPERT_LOCAL__PROFILE": design}
        code, stdout, _, seconds = cli(
            ["ask", "--local", "--model-path", str(model), "--json", row["question"]], run_env, timeout=900
        )
        try:
            reply = json.loads(stdout)
        except json.JSONDecodeError:
            reply = None
        text = str((reply or {}).get("answer") or "")[:90]
        print(f"  {design} {row['id']} exit={code} {seconds:.1f}s {text!r}", flush=True)
        out.append((row, code, reply, seconds))
    return out


def support_of(row: dict[str, Any], code: int, reply: dict[str, Any] | None) -> float | None:
    """The compact check's score of a given answer over the chunks it cites (None when there is no answer)."""
    from langchain_core.documents import Document

    from rags_expert.rag.verdict.cited import cited_support

    if code != 0 or not reply:
        return None
    docs = [Document(str(s.get("content") or "")) for s in reply.get("sources") or []]
    return round(cited_support(str(reply.get("answer") or ""), row["question"], docs).support, 3)


def confirmed(reply: dict[str, Any] | None) -> dict[str, float]:
    """The model's yes-probability and the calibrated confidence of a reply it was asked to confirm (``evidence.confirm``),
    as ``yes`` and ``confidence``; nothing otherwise."""
    asked = (reply or {}).get("confirmation") or {}
    return {k: float(asked[k]) for k in ("yes", "confidence") if k in asked}


def fit(
    results: list[dict[str, Any]],
    design: str,
    key: str = "support",
    max_wrong: float = 0.05,
    min_honest: float = 0.9,
    steps: int = 20,
) -> tuple[str, float, list[tuple[float, int, int, int]]]:
    """The threshold curve of a score ``key`` (``support``: ``evidence.min_cited_support``; ``confidence``:
    ``evidence.min_confirm``) on a run made with its threshold at 0, and the threshold chosen: the lowest whose wrong
    answers stay within ``max_wrong`` of the answerable with ``min_honest`` of the unanswerable declined; when none
    does (a wrong answer its chunks hold word for word, which no threshold removes), the one with the most
    right − wrong answers at ``min_honest``, the highest of a tie (the cautious end of the plateau); and the curve's
    points ``(threshold, right, wrong, honest)``."""
    res = [r for r in results if r["design"] == design]
    ans = [r for r in res if r["kind"] != "unanswerable"]
    una = [r for r in res if r["kind"] == "unanswerable"]
    lines = [f"| {key} ≥ | right+cited | wrong success | honest |", "|---|---|---|---|"]
    curve = []
    for t in [x / steps for x in range(steps + 1)]:
        ok = [r for r in res if r.get(key) is not None and r[key] >= t]
        right = sum(bool(r.get("right_cited")) for r in ok if r["kind"] != "unanswerable")
        wrong = sum(bool(r.get("wrong_success")) for r in ok)
        honest = len(una) - sum(1 for r in ok if r["kind"] == "unanswerable")
        lines.append(f"| {t:.2f} | {right}/{len(ans)} | {wrong}/{len(ans)} | {honest}/{len(una)} |")
        curve.append((t, right, wrong, honest))
    allowed = [c for c in curve if c[3] >= min_honest * len(una)] or curve
    within = [c for c in allowed if c[2] <= max_wrong * len(ans)]
    if within:
        chosen, why = min(within, key=lambda c: c[0]), f"the lowest with wrong ≤ {max_wrong:.0%}"
    else:
        chosen = max(allowed, key=lambda c: (c[1] - c[2], c[0]))
        why = f"no threshold keeps wrong ≤ {max_wrong:.0%}: the most right − wrong, the highest of a tie"
    text = "\n".join(lines) + f"\n\nchosen: {chosen[0]:.2f} ({why}; honest ≥ {min_honest:.0%})"
    return text, chosen[0], curve


def scored(asked: list[tuple], tops: dict[str, list[str]], design: str) -> list[dict[str, Any]]:
    """Each question's row of the table, with the design, calls, prompt tokens, seconds and support."""
    rows = []
    for row, code, reply, seconds in asked:
        usage = (reply or {}).get("usage") or {}
        rows.append(
            rd.score(row, code, reply, tops[row["id"]])
            | {
                "design": design,
                "seconds": round(seconds, 2),
                "calls": int(usage.get("calls") or 0),
                "input_tokens": int(usage.get("input_tokens") or 0),
                "output_tokens": int(usage.get("output_tokens") or 0),
                "node_seconds": {
                    node: round(float(t.get("wall_s") or 0.0), 2)
                    for node, t in (((reply or {}).get("timings") or {}).get("by_node") or {}).items()
                },
                "support": support_of(row, code, reply),
                "answer_kind": (reply or {}).get("answer_kind") if code == 0 else None,
                **confirmed(reply),
            }
        )
    return rows


def p90(values: list[float]) -> float:
    """The 90th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered)) - 1))]


def table(results: list[dict[str, Any]], designs: list[str]) -> str:
    """One row per design over the same questions."""
    head = (
        "| design | right+cited literal | right+cited paraphrased | wrong success (of answerable) | honest on "
        "unanswerable | right − wrong (of answerable) | model calls / question | prompt tokens / question | "
        "median s | p90 s |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for design in designs:
        res = [r for r in results if r["design"] == design]
        if not res:
            continue
        lit = [r for r in res if r["kind"] == "literal"]
        par = [r for r in res if r["kind"] == "paraphrased"]
        una = [r for r in res if r["kind"] == "unanswerable"]
        ans = lit + par
        right = sum(bool(r.get("right_cited")) for r in ans)
        wrong = sum(bool(r.get("wrong_success")) for r in ans)

        def share(rows: list[dict[str, Any]], key: str) -> str:
            hits = sum(bool(r.get(key)) for r in rows)
            return f"{hits}/{len(rows)} ({rd.pct(hits, len(rows))})"

        secs = [r["seconds"] for r in res]
        cells = [
            design,
            share(lit, "right_cited"),
            share(par, "right_cited"),
            share(ans, "wrong_success"),
            share(una, "honest"),
            f"{right - wrong} ({rd.pct(right - wrong, len(ans))})",
            f"{statistics.mean(r['calls'] for r in res):.1f}",
            f"{statistics.mean(r['input_tokens'] for r in res):.0f}",
            f"{statistics.median(secs):.1f}",
            f"{p90(secs):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ceiling(results: list[dict[str, Any]], designs: list[str]) -> str:
    """What a perfect check could make of the designs' answers, per kind of answerable question: each design's
    right and cited answers, and the questions that any of them answers right (a check that gives every right
    answer and withholds every wrong one, choosing among the designs' answers). No check can do better than the
    readings it checks: this bounds every design that only adds checks to them."""
    by_id: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        by_id.setdefault(r["id"], {})[r["design"]] = r
    common = [rows for rows in by_id.values() if all(d in rows for d in designs)]
    head = "| questions | " + " | ".join(designs) + " | any of them (a perfect check) |"
    lines = [head, "|---" * (len(designs) + 2) + "|"]
    for kind in ("literal", "paraphrased"):
        rows = [r for r in common if r[designs[0]]["kind"] == kind]
        cells = [f"{kind} ({len(rows)})"]
        for design in designs:
            hits = sum(bool(r[design].get("right_cited")) for r in rows)
            cells.append(f"{hits} ({rd.pct(hits, len(rows))})")
        anyone = sum(any(r[d].get("right_cited") for d in designs) for r in rows)
        cells.append(f"{anyone} ({rd.pct(anyone, len(rows))})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def node_times(results: list[dict[str, Any]], designs: list[str]) -> str:
    """Per design that recorded them (the CLI's ``timings``), the median seconds of each node that took ≥ 0.1 s,
    and the median prompt and output tokens a question."""
    parts = []
    for design in designs:
        res = [r for r in results if r["design"] == design and r.get("node_seconds")]
        if not res:
            continue
        nodes = sorted({n for r in res for n in r["node_seconds"]})
        medians = {n: statistics.median(r["node_seconds"].get(n, 0.0) for r in res) for n in nodes}
        shown = ", ".join(f"{n} {s:.1f} s" for n, s in sorted(medians.items(), key=lambda x: -x[1]) if s >= 0.1)
        tokens = statistics.median(r.get("input_tokens", 0) for r in res)
        out = statistics.median(r.get("output_tokens", 0) for r in res)
        parts.append(
            f"{design}: {shown or 'no node ≥ 0.1 s'} (median; {tokens:.0f} prompt and {out:.0f} output tokens)"
        )
    return "; ".join(parts)


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several saved runs as one, over the questions every design of them asked (a slow design run on fewer)."""
    if len(runs) == 1:
        return runs[0]
    results = [r for run in runs for r in run["results"]]
    designs = {r["design"] for r in results}
    common = set.intersection(*({r["id"] for r in results if r["design"] == d} for d in designs))
    meta = dict(runs[0]["meta"]) | {"limit": min(run["meta"]["limit"] or 10**6 for run in runs)}
    return {"meta": meta, "results": [r for r in results if r["id"] in common]}


def relabelled(spec: str) -> dict[str, Any]:
    """A saved run (``FILE``), its designs renamed as ``FILE:DESIGN=LABEL[,DESIGN=LABEL]`` says (an empty label
    leaves the design out: a later run of it stands instead)."""
    path, _, renames = spec.partition(":")
    run = json.loads(Path(path).read_text())
    names = dict(pair.split("=", 1) for pair in renames.split(",") if pair)
    for row in run["results"]:
        row["design"] = names.get(row["design"], row["design"])
    run["results"] = [row for row in run["results"] if row["design"]]
    return run


def model_key(upstream: str) -> str:
    """``15b`` for the 1.5B model's upstream name: the part of a results file's name that says which model."""
    key = next((k for k, m in models.MODELS.items() if m.upstream == upstream), "other")
    return key.replace(".", "")


def report(data: dict[str, Any], record: Path | None, name: str | None = None) -> None:
    """Print (and with ``record``, write) the table of a run."""
    meta, results = data["meta"], data["results"]
    designs = list(dict.fromkeys(r["design"] for r in results))
    text = table(results, designs)
    questions = len({r["id"] for r in results})
    mode = "in-process (one model server)" if meta["in_process"] else "through the CLI"
    print(f"\n{meta['model']}, split={meta['split']}, {questions} questions, {mode}, at {meta['commit'][:7]}\n")
    print(text)
    if per_node := node_times(results, designs):
        print(f"\nseconds by node: {per_node}")
    print("\nnot right+cited (answerable) or not honest (unanswerable):")
    for r in results:
        ok = r.get("honest") if r["kind"] == "unanswerable" else r.get("right_cited")
        if not ok:
            print(
                f"- {r['design']} {r['id']} ({r['kind']}) exit {r['code']}: {' '.join(str(r.get('answer')).split())[:140]}"
            )
    limit = f"_first{meta['limit']}" if meta.get("limit") else ""
    bench_results.record(
        record,
        name or f"local_designs_{model_key(meta['model'])}_{meta['split']}{limit}",
        f"Designs on {meta['model']}, real documentation {meta['split']} half ({mode})",
        text,
        notes=f"{questions} questions ({meta['corpora']}), the same knowledge bases and model for every design."
        + (f" Seconds by node: {per_node}." if per_node else ""),
    )


async def run_in_process(design: str, prepared: list[tuple], env: dict[str, str]) -> list[tuple]:
    """The graph's answers in this process, one model server for every corpus."""
    return await rd.ask_in_process([(n, d, t) for n, d, t, _ in prepared], env | {"RAGS_EXPERT_LOCAL__PROFILE": design})


async def run_plain(prepared: list[tuple], env: dict[str, str], model: Path, k: int) -> list[tuple]:
    """Plain RAG over every corpus, with one model server started here."""
    from rags_expert.local.server import maybe_local
    from rags_expert.settings import RagsExpertSettings

    with rd.environ(env):
        base = RagsExpertSettings()
    out = []
    async with maybe_local(base, True) as local:
        await local.ready()
        for _, data, rows, _ in prepared:
            out += await ask_plain(rows, data, env, local.settings.llm, k)
    return out


def run_meta(args: argparse.Namespace, prepared: list[tuple]) -> dict[str, Any]:
    """What a saved run says about itself."""
    return {
        "model": models.MODELS[args.model].upstream,
        "split": args.split,
        "limit": args.limit,
        "in_process": args.in_process,
        "corpora": ", ".join(n for n, *_ in prepared),
        "commit": bench_results.git("rev-parse", "HEAD"),
        "env": dict(e.split("=", 1) for e in args.env),
    }


def main() -> int:
    """Prepare the knowledge bases, run each design on the same questions, print and record the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=list(models.MODELS), default="1.5b")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--corpus", nargs="+")
    parser.add_argument("--limit", type=int, default=0, help="first N questions of each corpus and kind")
    parser.add_argument("--ids", nargs="+", help="only the questions of these ids (of those --limit selects)")
    parser.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--k", type=int, default=4, help="chunks plain RAG reads (retrieval.top_k's default)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--kb-dir", type=Path, default=KB)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--report",
        nargs="+",
        metavar="FILE[:DESIGN=LABEL]",
        help="print (and --record) the table of runs saved by --out (several: over the questions all designs asked); "
        "':compact=compact (issue 52, first)' shows a file's design under another name (an earlier code's run)",
    )
    parser.add_argument(
        "--ceiling",
        nargs="+",
        metavar="FILE[:DESIGN=LABEL]",
        help="what a perfect check could keep of the saved runs' answers (runs without thresholds), per kind",
    )
    parser.add_argument("--name", help="the recorded table's name (default: from the model, split and limit)")
    parser.add_argument(
        "--fit", type=Path, help="the min_cited_support curve of a compact run saved by --out (made with it at 0)"
    )
    bench_results.add_option(parser)
    args = parser.parse_args()
    if args.report:
        runs = [relabelled(spec) for spec in args.report]
        report(merged(runs), args.record, args.name)
        return 0
    if args.ceiling:
        data = merged([relabelled(spec) for spec in args.ceiling])
        designs = list(dict.fromkeys(r["design"] for r in data["results"]))
        text = ceiling(data["results"], designs)
        print(text)
        meta = data["meta"]
        bench_results.record(
            args.record,
            args.name or f"local_designs_ceiling_{model_key(meta['model'])}_{meta['split']}",
            f"What a perfect check could keep on {meta['model']}, real documentation {meta['split']} half",
            text,
            notes=f"{len({r['id'] for r in data['results']})} questions, runs saved at {meta['commit'][:7]}: each "
            "design's right and cited answers, and the questions any answers right (a check only withholds answers).",
        )
        return 0
    if args.fit:
        saved = json.loads(args.fit.read_text())
        text, _, _ = fit(saved["results"], "compact")
        print(text)
        meta = saved["meta"]
        bench_results.record(
            args.record,
            f"local_designs_fit_{meta['split']}",
            f"evidence.min_cited_support on {meta['model']}, {meta['split']} half (compact, run at 0)",
            text,
            notes=f"{len({r['id'] for r in saved['results']})} questions ({meta['corpora']}). "
            + text.rsplit("\n", 1)[-1],
        )
        return 0
    model = models.model_path(args.model)
    if model is None:
        print(f"SKIPPED: {models.skip_reason(args.model)}")
        return 0
    corpora = rd.load_corpora()
    names = args.corpus or list(corpora)
    rows = rd.select(rd.load_questions(), args.split, names, args.limit)
    if args.ids:
        wanted = set(args.ids)
        rows = [r for r in rows if r["id"] in wanted]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(ROOT), "RAGS_EXPERT_LOCAL__MODEL_PATH": str(model)}
    env |= dict(e.split("=", 1) for e in args.env)
    prepared = []
    for name in names:
        todo = [r for r in rows if r["corpus"] == name]
        if not todo:
            continue
        m = corpora[name]
        data = args.kb_dir / name
        rd.ingest(rd.corpus_dir(name, m, rd.CACHE) / m.get("root", "docs"), env | rd.data_env(data))
        prepared.append((name, data, todo, rd.top_sources(todo, data, env | rd.data_env(data))))
    tops = {r["id"]: top[r["id"]] for _, _, todo, top in prepared for r in todo}
    results: list[dict[str, Any]] = []
    for design in args.designs:
        print(f"{design}:", flush=True)
        if design == "plain":
            asked = asyncio.run(run_plain(prepared, env, model, args.k))
        elif args.in_process:
            asked = asyncio.run(run_in_process(design, prepared, env))
        else:
            asked = [a for _, data, todo, _ in prepared for a in ask_cli(todo, data, env, design, model)]
        results += scored(asked, tops, design)
        if args.out:  # after each design: a slow run stopped later keeps what it measured
            args.out.write_text(json.dumps({"meta": run_meta(args, prepared), "results": results}, indent=2))
    meta = run_meta(args, prepared)
    data = {"meta": meta, "results": results}
    if args.out:
        args.out.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    report(data, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
