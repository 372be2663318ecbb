"""Requests and seconds per question of the likelihood scorer, by batching: prompts per request, slots, requests
in flight.

Reads the candidates of a few questions from a ``bench/reader_signals.py --out`` file (its units' texts), starts the
xllamacpp runner with 1 generating and 1 prompt thread and ``--parallel`` slots, and scores every unit's question
likelihood ``log P(q | heading + unit)`` (and with ``--pmi`` the answer PMI's two texts) in each layout.

    python bench/likelihood_speed.py --in /tmp/wtr_f_starlette.jsonl --questions 3 --parallel 1 8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from likelihood import (  # noqa: E402
    QUESTION_PROMPT,
    SENTENCE_PRIOR_PROMPT,
    SENTENCE_PROMPT,
    LikelihoodScorer,
)

from rags_expert.local.command import find_model, free_port  # noqa: E402
from rags_expert.settings import LocalModelSettings  # noqa: E402


def start(parallel: int) -> tuple[subprocess.Popen[bytes], str]:
    """The runner on a free port with 1+1 threads and ``parallel`` slots, once it answers."""
    port = free_port("127.0.0.1")
    cmd = [sys.executable, "-m", "rags_expert.local.xllamacpp", "--model", str(find_model(LocalModelSettings()))]
    cmd += ["--port", str(port), "--n-ctx", "8192", "--threads", "1", "--threads-batch", "1"]
    cmd += ["--parallel", str(parallel)]
    env = os.environ | {"OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as r:  # noqa: S310
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start")


def jobs(question: dict, pmi: bool) -> list[list[tuple[str, str]]]:
    """The (prompt, text) pairs of one question, grouped by forced text (one grammar per request)."""
    q = " " + question["question"].strip()
    ql = [(QUESTION_PROMPT.format(passage=f"{u['heading']}\n{u['text']}".strip()), q) for u in question["units"]]
    groups = [ql]
    if pmi:
        for u in question["units"]:
            cond = SENTENCE_PROMPT.format(context=u["heading"], question=question["question"].strip())
            groups.append(
                [(cond, " " + u["text"]), (SENTENCE_PRIOR_PROMPT.format(context=u["heading"]), " " + u["text"])]
            )
    return groups


def run(url: str, questions: list[dict], batch: int, concurrency: int, pmi: bool) -> tuple[float, float]:
    """(median seconds, median requests) per question."""
    secs, reqs = [], []
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for q in questions:
            scorer = LikelihoodScorer(url, batch=batch, max_tokens=24 if pmi else 96)
            began = time.monotonic()
            parts = [g[s : s + batch] for g in jobs(q, pmi) for s in range(0, len(g), batch)]
            list(pool.map(scorer.score, parts))
            secs.append(time.monotonic() - began)
            reqs.append(scorer.requests)
    secs.sort()
    reqs.sort()
    return secs[len(secs) // 2], reqs[len(reqs) // 2]


def main() -> int:
    """Time each layout on each server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in", dest="inp", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--pmi", action="store_true")
    args = parser.parse_args()
    questions = [json.loads(x) for x in args.inp.read_text().splitlines() if x.strip()][: args.questions]
    units = sum(len(q["units"]) for q in questions) / len(questions)
    print(f"{len(questions)} questions, {units:.0f} units each on average; {'QL + PMI' if args.pmi else 'QL'}\n")
    print("| slots (--parallel) | prompts per request | requests in flight | s/question (median) | requests/question |")
    print("|---|---|---|---|---|")
    for parallel in args.parallel:
        proc, url = start(parallel)
        try:
            layouts = [(1, 1), (16, 1)] + ([(8, parallel), (16, parallel)] if parallel > 1 else [])
            for batch, concurrency in layouts:
                s, r = run(url, questions, batch, concurrency, args.pmi)
                print(f"| {parallel} | {batch} | {concurrency} | {s:.1f} | {r:.0f} |", flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
