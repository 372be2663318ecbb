"""``rags-expert ask --local`` from the command line to the answer, phase by phase, for several checkouts.

    python bench/local_startup.py [--checkout before=/path/to/old/checkout] [--rounds 3] [--json out.json]

Every checkout (this one is ``after``; add others with ``--checkout LABEL=PATH``, e.g. a ``git worktree`` of
an older commit) answers the same questions from the same knowledge base: the single-fact documents
(``bench/single_fact/docs``, ingested once with this checkout), one answerable and one unanswerable
question, each ``python -m rags_expert.cli ask --local`` a fresh process, as a user runs it. Checkouts are
interleaved within each round so machine noise hits them alike. From the time stamps of the progress lines
on stderr:

* **start-up**: process start → ``[searching the knowledge base]`` (imports, model server, agent);
* **answer**: ``[searching …]`` → the answer printed (retrieval, grading, the model's draft, its checks);
* **total**: the whole process, exit included.

Prints a markdown table of medians and the ratio of each checkout's total to the first one's, with the
machine's load average (the machine is shared: run on idle cores for the idle figure).
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
DOCS = ROOT / "bench" / "single_fact" / "docs"
QUESTIONS = {"answerable": "Who built the Zephyr lighthouse?", "unanswerable": "Who painted the Zephyr lighthouse?"}
SEARCHING = "[searching the knowledge base]"


def env_for(checkout: Path, data: str) -> dict[str, str]:
    """The environment of one run: the checkout on the path, a private knowledge base, no user settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(checkout), "RAGS_EXPERT_DATA_DIR": data}


def timed_ask(checkout: Path, data: str, question: str) -> dict[str, Any]:
    """One ``ask --local`` with the time of each line it prints."""
    began = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "rags_expert.cli", "ask", "--local", question],
        env=env_for(checkout, data),
        cwd=checkout,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines = [(time.monotonic() - began, line.rstrip("\n")) for line in proc.stdout]
    code = proc.wait()
    total = time.monotonic() - began
    searching = next((t for t, line in lines if line == SEARCHING), None)
    answered = next((t for t, line in lines if not line.startswith("[")), total)
    return {
        "code": code,
        "startup": searching,
        "answer": answered - searching if searching is not None else None,
        "total": total,
        "output": [line for _, line in lines if not line.startswith("[")][:1],
    }


def main() -> None:
    """Ingest once, run every checkout on every question per round, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", default=[], help="LABEL=PATH of another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    checkouts = {label: Path(path).resolve() for label, path in (c.split("=", 1) for c in args.checkout)}
    checkouts["after"] = ROOT
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(c, q): [] for c in checkouts for q in QUESTIONS}
    with tempfile.TemporaryDirectory() as data:
        ingest = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "rags_expert.cli", "ingest", str(DOCS), "-q"],
            env=env_for(ROOT, data),
            capture_output=True,
            text=True,
        )
        if ingest.returncode != 0:
            raise SystemExit(f"ingest failed: {ingest.stderr[-500:]}")
        for r in range(args.rounds):
            for kind, question in QUESTIONS.items():
                for label, path in checkouts.items():
                    run = timed_ask(path, data, question)
                    runs[(label, kind)].append(run)
                    print(f"round {r} {label:8s} {kind:12s} exit={run['code']} {run['total']:.1f}s", file=sys.stderr)
    load = os.getloadavg()[0]
    first = next(iter(checkouts))
    print(f"\n{args.rounds} rounds, medians; load average (1 min) at the end: {load:.2f}\n")
    print("| checkout | question | exit codes | start-up s | answer s | total s | total / " + first + " |")
    print("|---|---|---|---|---|---|---|")
    for kind in QUESTIONS:
        base = statistics.median(r["total"] for r in runs[(first, kind)])
        for label in checkouts:
            rs = runs[(label, kind)]
            med = {k: statistics.median(r[k] for r in rs if r[k] is not None) for k in ("startup", "answer", "total")}
            codes = ",".join(str(r["code"]) for r in rs)
            print(
                f"| {label} | {kind} | {codes} | {med['startup']:.1f} | {med['answer']:.1f} | {med['total']:.1f} | "
                f"{med['total'] / base:.2f} |"
            )
    if args.json:
        args.json.write_text(json.dumps({f"{c}/{q}": v for (c, q), v in runs.items()}, indent=2))


if __name__ == "__main__":
    main()
