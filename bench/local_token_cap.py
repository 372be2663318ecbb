"""Does the local server honour the output cap ChatOpenAI sends? Reply token counts under a 48-token cap.

Run (needs the 'local' extra and ../shared/data)::

    python bench/local_token_cap.py [--cap 48] [--calls 10] [--answers 5] [--modules llama_cpp.server other.module ...]

``ChatOpenAI`` sends its cap as ``max_completion_tokens``; llama-cpp-python's server (0.3.x) reads only
``max_tokens``. A local server (started by :class:`~rags_expert.local.server.LocalModelServer`; ``--modules``
runs one per named module with the runner's command line, to compare another runner) gets the same
requests from two chat models, interleaved: ``local_settings`` as shipped (``llm.legacy_max_tokens``: the
cap also goes in the request body as ``max_tokens``) and the same with that switch off. Requests: answer
calls (``llm.max_tokens`` = the cap, prompts that invite a long reply) and plain-text relevance grading calls
(``grading.max_tokens`` = the cap, HotpotQA dev paragraphs; a small model rambles past a verdict). Prints a
markdown table of reply tokens per variant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from langchain_core.messages import HumanMessage

from rags_expert.llm import grading, structured
from rags_expert.llm.chat import build_chat_model
from rags_expert.local import server as local_llm
from rags_expert.local.server import LocalModelServer, local_settings
from rags_expert.settings import RagsExpertSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.shared_data import HOTPOTQA_DEV as DEV  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data

LONG = [
    "Write a long story about a lighthouse keeper and a storm.",
    "Explain in detail how a steam engine works, step by step.",
    "List as many European capitals as you can, with one fact about each.",
    "Describe the history of the printing press in several paragraphs.",
    "Write a detailed recipe for bread, with every step explained.",
]


def relevance_prompts(n: int, ctx: grading.GradingContext) -> list[Any]:
    """``n`` relevance-grading prompts: dev questions with their first paragraph."""
    out = []
    for line in DEV.read_text().splitlines()[:n]:
        row = json.loads(line)
        para = row["paragraphs"][0]
        document = f"{para['title']}: " + "".join(para["sentences"])
        out.append(ctx.messages("grade_document", question=row["question"], document=document))
    return out


def tokens_of(reply: Any) -> int:
    return int((getattr(reply, "usage_metadata", None) or {}).get("output_tokens") or 0)


async def measure(settings: RagsExpertSettings, kind: str, prompt: Any) -> dict[str, Any]:
    """One capped call (an answer, or a plain-text grading call) and its reply's token count."""
    began = time.monotonic()
    model = build_chat_model(settings.llm)
    if kind == "answer":
        reply = await model.ainvoke([HumanMessage(prompt)])
    else:
        ctx = grading.GradingContext.from_settings(settings)
        reply = await structured._structured_runnable(model, grading.RelevanceGrade, ctx, "text").ainvoke(prompt)
    finish = (getattr(reply, "response_metadata", None) or {}).get("finish_reason")
    return {"kind": kind, "tokens": tokens_of(reply), "finish": finish, "seconds": time.monotonic() - began}


def markdown(rows: dict[tuple[str, str], list[dict[str, Any]]], cap: int) -> str:
    lines = [
        f"| request (cap {cap} tokens) | runner | cap sent as | calls | reply tokens max | mean | at the cap "
        "| over the cap |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind in ("answer", "grading"):
        for (module, variant), results in rows.items():
            rs = [r for r in results if r["kind"] == kind]
            toks = [r["tokens"] for r in rs]
            lines.append(
                f"| {kind} | `{module}` | {variant} | {len(rs)} | {max(toks)} | {statistics.mean(toks):.1f} "
                f"| {sum(t == cap for t in toks)} | {sum(t > cap for t in toks)} |"
            )
    return "\n".join(lines)


async def run_module(
    base: RagsExpertSettings, module: str | None, calls: int, answers: int
) -> dict[str, list[dict[str, Any]]]:
    """Start the runner (its module replaced by ``module``), send every prompt from both chat models."""
    command = local_llm.server_command

    def with_module(*a: Any) -> list[str]:
        cmd = command(*a)
        if module and cmd[1:2] == ["-m"]:
            cmd[2] = module
        return cmd

    with mock.patch.object(local_llm, "server_command", with_module):
        async with LocalModelServer(base.local) as server:
            body = local_settings(base, server.base_url)
            dropped = body.model_copy(update={"llm": body.llm.model_copy(update={"legacy_max_tokens": False})})
            variants = {"max_completion_tokens + max_tokens in body": body, "max_completion_tokens only": dropped}
            ctx = grading.GradingContext.from_settings(body)
            prompts = [("answer", p) for p in LONG[:answers]] + [("grading", m) for m in relevance_prompts(calls, ctx)]
            rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            for kind, prompt in prompts:
                for name, settings in variants.items():
                    rows[name].append(await measure(settings, kind, prompt))
                    print(f"  {module} {name} {kind}: {rows[name][-1]}", file=sys.stderr)
    return rows


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=48)
    parser.add_argument("--calls", type=int, default=10, help="grading calls per variant")
    parser.add_argument("--answers", type=int, default=len(LONG), help="answer calls per variant")
    parser.add_argument("--modules", nargs="*", default=[], help="runner modules to compare (same arguments)")
    args = parser.parse_args()
    base = RagsExpertSettings(local={"max_tokens": args.cap, "grading_max_tokens": args.cap})
    default = local_llm.server_command(base.local, Path("model.gguf"), 0)[2]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for module in args.modules or [default]:
        for variant, results in (await run_module(base, module, args.calls, args.answers)).items():
            rows[(module, variant)] = results
    print(markdown(rows, args.cap))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
