"""Measure the local model through ChatOpenAI: startup, plain-chat latency, and each structured-output method.

Run (needs the 'local' extra and ../shared/data)::

    python bench/local_model.py [--questions 6] [--json out.json]

For every ``grading.structured_output`` method it grades, for each of the first N HotpotQA dev questions,
one gold paragraph (should be relevant) and one distractor (should not): it records HTTP errors, the
reply's shape (tool call, malformed tool call, text), whether the schema parsed, whether the tolerant
fallback parsed, the verdict's accuracy, output tokens and latency.
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

from langchain_core.messages import HumanMessage

from rags_expert import grading
from rags_expert.llm import build_chat_model
from rags_expert.local_llm import LocalModelServer, local_settings
from rags_expert.parsing import parse_model, parse_yes_no
from rags_expert.settings import RagsExpertSettings

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"
METHODS = ("function_calling", "json_schema", "json_mode", "text")


def cases(n: int) -> list[tuple[str, str, bool]]:
    """(question, paragraph, expected relevance): a gold and a distractor paragraph per dev question."""
    out = []
    for line in DEV.read_text().splitlines()[:n]:
        row = json.loads(line)
        gold_titles = {t for t, _ in row["supporting_facts"]}
        gold = next(p for p in row["paragraphs"] if p["title"] in gold_titles)
        other = next(p for p in row["paragraphs"] if p["title"] not in gold_titles)
        for para, expected in ((gold, True), (other, False)):
            out.append((row["question"], f"{para['title']}: " + "".join(para["sentences"]), expected))
    return out


def shape(reply: Any) -> str:
    """What a reply carried: tool call, malformed tool call, and/or text."""
    parts = []
    if getattr(reply, "tool_calls", None):
        parts.append("tool_call")
    if getattr(reply, "invalid_tool_calls", None):
        parts.append("malformed_tool_call")
    if grading.message_text(reply).strip():
        parts.append("text")
    return "+".join(parts) or "empty"


async def one(model: Any, ctx: grading.GradingContext, question: str, para: str, expected: bool) -> dict[str, Any]:
    """One relevance grading call, recorded in detail."""
    runnable = grading._structured_runnable(model, grading.RelevanceGrade, ctx)
    messages = ctx.messages("grade_document", question=question, document=para)
    began = time.monotonic()
    try:
        reply = await asyncio.wait_for(runnable.ainvoke(messages), ctx.settings.timeout)
    except Exception as exc:  # noqa: BLE001 - recorded, this is a measurement
        status = getattr(exc, "status_code", "")
        return {
            "error": f"{type(exc).__name__} {status}".strip(),
            "seconds": time.monotonic() - began,
            "detail": str(exc)[:200],
        }
    seconds = time.monotonic() - began
    payloads = grading._reply_payloads(reply)
    raw = " | ".join(p if isinstance(p, str) else str(p) for p in payloads)
    obj = next((o for p in payloads if (o := parse_model(grading.RelevanceGrade, p)) is not None), None)
    loose = None if obj is not None else parse_yes_no(raw)
    value = obj.relevant if obj is not None else (loose if loose is not None else ctx.settings.default_relevant)
    usage = getattr(reply, "usage_metadata", None) or {}
    return {
        "shape": shape(reply),
        "schema_parsed": obj is not None,
        "loose_parsed": loose is not None,
        "correct": value == expected,
        "said_relevant": value,
        "seconds": seconds,
        "out_tokens": usage.get("output_tokens"),
        "finish": (reply.response_metadata or {}).get("finish_reason"),
        "raw": raw[:160],
    }


def summarize(method: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    n = len(rows)
    return {
        "method": method,
        "calls": n,
        "http_errors": n - len(ok),
        "errors": sorted({r["error"] for r in rows if "error" in r}),
        "shapes": sorted({r["shape"] for r in ok}),
        "schema_parsed": sum(r["schema_parsed"] for r in ok),
        "any_parsed": sum(r["schema_parsed"] or r["loose_parsed"] for r in ok),
        "correct": sum(r["correct"] for r in ok),
        "correct_when_parsed": sum(r["correct"] for r in ok if r["schema_parsed"] or r["loose_parsed"]),
        "said_relevant": sum(r["said_relevant"] for r in ok),
        "median_s": round(statistics.median(r["seconds"] for r in rows), 2) if rows else None,
        "max_out_tokens": max((r["out_tokens"] or 0 for r in ok), default=0),
        "finish": sorted({str(r["finish"]) for r in ok}),
        "sample": ok[0]["raw"] if ok else rows[0].get("detail"),
    }


async def plain_chat(base: RagsExpertSettings, n: int = 5) -> list[float]:
    """Latency of plain chat answers through ChatOpenAI."""
    model = build_chat_model(base.llm)
    times = []
    for q in [
        "What is the capital of France?",
        "Name a primary colour.",
        "What is 2 plus 2?",
        "Who wrote Hamlet?",
        "What language is spoken in Brazil?",
    ][:n]:
        began = time.monotonic()
        reply = await model.ainvoke([HumanMessage(q)])
        times.append(time.monotonic() - began)
        print(f"  plain chat {times[-1]:.2f}s: {q} -> {grading.message_text(reply)[:100]!r}", file=sys.stderr)
    return times


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = RagsExpertSettings()
    async with LocalModelServer(base.local) as server:
        print(f"startup: {server.startup_seconds:.1f}s", file=sys.stderr)
        settings = local_settings(base, server.base_url)
        chat = await plain_chat(settings)
        table = []
        for method in METHODS:
            s = settings.model_copy(
                update={"grading": settings.grading.model_copy(update={"structured_output": method})}
            )
            ctx = grading.GradingContext.from_settings(s)
            model = build_chat_model(s.llm)
            rows = [await one(model, ctx, q, p, e) for q, p, e in cases(args.questions)]
            table.append(summarize(method, rows))
            print(json.dumps(table[-1]), file=sys.stderr)
        result = {
            "startup_s": round(server.startup_seconds or 0, 1),
            "plain_chat_s": [round(t, 2) for t in chat],
            "grading_max_tokens": settings.grading.max_tokens,
            "methods": table,
        }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
