"""The local model server's start-up and speed per thread / OpenMP setting, with and without a busy core.

Run (needs the 'local' extra and ../shared/data)::

    python bench/local_runner.py [--repeats 2] [--requests 3] [--out-tokens 60] [--json out.json]
                                 [--runners llama_cpp_python ...] [--only-default]

Every variant is a :class:`~rags_expert.settings.LocalModelSettings` (``threads``, ``threads_batch``,
``omp_wait_policy``) started by :class:`~rags_expert.local.server.LocalModelServer` exactly as ``--local``
starts it. Each runs with no burner (the machine as it is; print the load average next to the table) and
with one core kept busy by a burner process (``python -c 'while True: pass'``), variants interleaved
within each repeat so that machine noise hits them alike. Per server: seconds until it answers
``GET /v1/models``. Per request (a typical RAG prompt of ~600 tokens, HotpotQA dev paragraphs, streamed,
``--out-tokens`` tokens with end-of-sequence suppressed): prompt tokens/s = prompt tokens / time to the first token, generation tokens/s = tokens after the
first / time from the first to the last. A nonce at the start of every prompt defeats llama.cpp's
prompt-prefix cache. Prints a markdown table: medians, and ratios against the first variant (the
settings before OMP_WAIT_POLICY was set), per condition.

Every variant runs on the default runner (``local.runner``, ``xllamacpp`` as shipped); ``--runners R ...`` adds,
per named runner (``llama_cpp_python``: needs the ``local-compiled`` extra; ``llama_server``), a variant with the
default settings on that runner. ``--only-default`` keeps only the shipped default (and the ``--runners`` variants,
compared against it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import httpx

from rags_expert.local.server import LocalModelServer, available_cores, thread_counts
from rags_expert.settings import LocalModelSettings, LocalRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.shared_data import HOTPOTQA_DEV as DEV  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

#: SmolLM2's end tokens (<|endoftext|>, <|im_end|>), suppressed so every reply runs to the cap.
EOS_BIAS = {"0": -100, "2": -100}
SYSTEM = (
    "You answer questions using only the numbered context passages. Cite the passages you use as [n]. "
    "If the context does not contain the answer, say that you could not find it."
)


def variants(cores: int) -> dict[str, LocalModelSettings]:
    """The settings compared: before (spinning OpenMP, every core), then passive waits with thread splits.

    Thread counts are explicit, so the names stay true whatever the defaults are; ``(default)`` marks the
    variant equal to the shipped ``LocalModelSettings()``.
    """
    fewer = max(1, cores - 1)
    out = {
        f"before: spin, {cores}/{cores} threads": LocalModelSettings(
            omp_wait_policy="unset", threads=cores, threads_batch=cores
        ),
        f"passive, {cores}/{cores} threads": LocalModelSettings(threads=cores, threads_batch=cores),
        f"passive, {fewer}/{cores} threads": LocalModelSettings(threads=fewer, threads_batch=cores),
        f"passive, {fewer}/{fewer} threads": LocalModelSettings(threads=fewer, threads_batch=fewer),
        f"spin, {fewer}/{cores} threads": LocalModelSettings(
            omp_wait_policy="unset", threads=fewer, threads_batch=cores
        ),
    }
    default = thread_counts(LocalModelSettings())
    return {
        name + (" (default)" if s.omp_wait_policy == "PASSIVE" and (s.threads, s.threads_batch) == default else ""): s
        for name, s in out.items()
    }


def rag_prompts(n: int, paragraphs: int = 5) -> list[tuple[str, str]]:
    """``n`` (question, context) pairs: a dev question and its first ``paragraphs`` paragraphs, numbered."""
    out = []
    for line in DEV.read_text().splitlines()[:n]:
        row = json.loads(line)
        context = "\n\n".join(
            f"[{i}] {p['title']}: {''.join(p['sentences']).strip()}"
            for i, p in enumerate(row["paragraphs"][:paragraphs], 1)
        )
        out.append((row["question"], context))
    return out


def messages(nonce: int, question: str, context: str) -> list[dict[str, str]]:
    """Chat messages of one RAG request; the nonce comes first so no two requests share a cached prefix."""
    return [
        {"role": "system", "content": f"Request {nonce:06d}. {SYSTEM}"},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}\nAnswer with citations:"},
    ]


def count_prompt_tokens(base_url: str, prompts: list[tuple[str, str]]) -> list[int]:
    """The server's prompt-token count of each prompt (one untimed, 1-token request each)."""
    counts = []
    for i, (question, context) in enumerate(prompts):
        body = {"model": "m", "messages": messages(999_000 + i, question, context), "max_tokens": 1}
        reply = httpx.post(f"{base_url}/chat/completions", json=body, timeout=600).json()
        counts.append(int(reply["usage"]["prompt_tokens"]))
    return counts


def streamed(base_url: str, body: dict[str, Any]) -> tuple[float, list[float]]:
    """Send one streamed chat request: (seconds to the first content token, arrival time of every content token)."""
    began = time.monotonic()
    stamps: list[float] = []
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0].get("delta") or {}
            if delta.get("content"):
                stamps.append(time.monotonic())
    return (stamps[0] - began if stamps else float("nan")), stamps


def measure_server(
    settings: LocalModelSettings, prompts: list[tuple[str, str]], counts: list[int], out_tokens: int, nonce: int
) -> dict[str, Any]:
    """Start one server, send every prompt once (streamed), stop it; return its timings."""
    rows = []
    with LocalModelServer(settings) as server:
        startup = server.startup_seconds or float("nan")
        for i, ((question, context), n_prompt) in enumerate(zip(prompts, counts, strict=True)):
            body = {
                "model": settings.model_alias,
                "messages": messages(nonce + i, question, context),
                "max_tokens": out_tokens,
                "temperature": 0.0,
                "logit_bias": EOS_BIAS,
                "stream": True,
            }
            ttft, stamps = streamed(server.base_url, body)
            gen_s = stamps[-1] - stamps[0] if len(stamps) > 1 else float("nan")
            rows.append(
                {
                    "prompt_tokens": n_prompt,
                    "out_tokens": len(stamps),
                    "ttft_s": ttft,
                    "prompt_tps": n_prompt / ttft,
                    "gen_tps": (len(stamps) - 1) / gen_s,
                }
            )
    return {"startup_s": startup, "requests": rows}


@contextlib.contextmanager
def busy_core(enabled: bool) -> Iterator[None]:
    """One process spinning on a core for the duration of the block (when ``enabled``)."""
    if not enabled:
        yield
        return
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # noqa: S603 - fixed command
    try:
        time.sleep(0.5)
        yield
    finally:
        burner.kill()
        burner.wait()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(results: dict[str, dict[str, list[dict[str, Any]]]], names: list[str]) -> str:
    """Markdown: per condition and variant, median start-up, prompt and generation tokens/s, ratios to the first."""
    lines = [
        "| condition | variant (threads gen/prompt) | start-up s | prompt tok/s | generation tok/s "
        "| start-up × faster | prompt × | generation × |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for condition, per_variant in results.items():
        summary = {}
        for name in names:
            servers = per_variant[name]
            requests = [r for s in servers for r in s["requests"]]
            summary[name] = (
                median([s["startup_s"] for s in servers]),
                median([r["prompt_tps"] for r in requests]),
                median([r["gen_tps"] for r in requests]),
            )
        base = summary[names[0]]
        for name in names:
            start, prompt, gen = summary[name]
            lines.append(
                f"| {condition} | {name} | {start:.2f} | {prompt:.0f} | {gen:.1f} "
                f"| {base[0] / start:.2f} | {prompt / base[1]:.2f} | {gen / base[2]:.2f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="servers started per variant and condition")
    parser.add_argument("--requests", type=int, default=3, help="RAG prompts sent to each server")
    parser.add_argument("--out-tokens", type=int, default=60)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--runners", nargs="*", default=[], choices=get_args(LocalRunner), help="runners compared with the default"
    )
    parser.add_argument("--only-default", action="store_true", help="only the default (and --runners)")
    bench_results.add_option(parser)
    args = parser.parse_args()
    os.environ.pop("OMP_WAIT_POLICY", None)  # every variant sets (or leaves) it itself
    cores = available_cores()
    candidates = variants(cores)
    if args.only_default:
        candidates = {k: v for k, v in candidates.items() if k.endswith("(default)")}
    for runner in args.runners:
        candidates[f"{runner} runner, default settings"] = LocalModelSettings(runner=runner)
    names = list(candidates)
    prompts = rag_prompts(args.requests)
    with LocalModelServer(LocalModelSettings()) as server:  # warms the page cache; counts prompt tokens
        counts = count_prompt_tokens(server.base_url, prompts)
    print(f"{cores} cores; prompt tokens {counts}; load average before {os.getloadavg()}", file=sys.stderr)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    nonce = 0
    for condition, busy in (("no burner", False), ("1 core busy", True)):
        results[condition] = {name: [] for name in names}
        with busy_core(busy):
            for _ in range(args.repeats):
                for name in names:
                    nonce += 100
                    result = measure_server(candidates[name], prompts, counts, args.out_tokens, nonce)
                    results[condition][name].append(result)
                    gen = median([r["gen_tps"] for r in result["requests"]])
                    print(f"  {condition} | {name}: start {result['startup_s']:.2f}s gen {gen:.1f}/s", file=sys.stderr)
    print(table(results, names))
    title = "The local model server: start-up and tokens a second per runner and thread setting"
    bench_results.record(args.record, "local_runner", title, table(results, names))
    print(f"\n{cores} cores; load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    if args.json:
        args.json.write_text(json.dumps({"cores": cores, "prompt_tokens": counts, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
