"""Measure the local model through ChatOpenAI: startup, plain-chat latency, and each structured-output method.

Run (needs the 'local' extra and ../shared/data)::

    python bench/local_model.py [--questions 5] [--json out.json]

For each of the first N HotpotQA dev questions it makes four real grading prompts: relevance of a gold
paragraph (should be relevant) and of a distractor (should not), groundedness of the gold answer in the
gold paragraphs, and usefulness of the gold answer (4 N calls per method). Every prompt goes to every
method in turn (interleaved, so machine noise hits them alike), with the local grading cap. Before every
timed call a one-token request with another prompt evicts the server's prompt cache (llama-cpp-python
reuses the longest common prefix of the previous prompt), so no method gets the prompt read for free. Per method:
HTTP errors, the reply's shape (tool call, malformed tool call, text), whether the schema parsed, whether
the tolerant fallback parsed, relevance accuracy, output and prompt tokens, and seconds per call.
``json_object+schema`` is llama-cpp-python's grammar-constrained JSON (``response_format`` of type
``json_object`` with a ``schema``), measured as a candidate method.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, get_args

import httpx
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from rags_expert.citations import format_context
from rags_expert.llm import grading, structured
from rags_expert.llm.chat import build_chat_model
from rags_expert.llm.parsing import parse_model, parse_yes_no
from rags_expert.local.server import LocalModelServer, local_settings
from rags_expert.settings import RagsExpertSettings, StructuredOutputMethod

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.shared_data import HOTPOTQA_DEV as DEV  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

CANDIDATE = "json_object+schema"
METHODS = (*get_args(StructuredOutputMethod), CANDIDATE)
FIELDS = {grading.RelevanceGrade: "relevant", grading.GroundednessGrade: "grounded", grading.UsefulnessGrade: "useful"}


def _paragraph(p: dict[str, Any]) -> str:
    return f"{p['title']}: " + "".join(p["sentences"]).strip()


def cases(n: int, ctx: grading.GradingContext) -> list[tuple[type[BaseModel], list[BaseMessage], bool]]:
    """(schema, messages, expected verdict): four real grading prompts per dev question."""
    out: list[tuple[type[BaseModel], list[BaseMessage], bool]] = []
    for line in DEV.read_text().splitlines()[:n]:
        row = json.loads(line)
        question, answer = row["question"], f"The answer is {row['answer']}."
        gold_titles = {t for t, _ in row["supporting_facts"]}
        gold = [p for p in row["paragraphs"] if p["title"] in gold_titles]
        other = next(p for p in row["paragraphs"] if p["title"] not in gold_titles)
        for para, expected in ((gold[0], True), (other, False)):
            msgs = ctx.messages("grade_document", question=question, document=_paragraph(para))
            out.append((grading.RelevanceGrade, msgs, expected))
        docs = format_context([Document(_paragraph(p), metadata={"title": p["title"]}) for p in gold])
        msgs = ctx.messages("grade_grounded", trusted=("documents",), documents=docs, answer=answer)
        out.append((grading.GroundednessGrade, msgs, True))
        out.append((grading.UsefulnessGrade, ctx.messages("grade_useful", question=question, answer=answer), True))
    return out


def runnable_for(model: Any, schema: type[BaseModel], ctx: grading.GradingContext, method: str) -> Runnable:
    """The grading call's runnable: the grading module's own for its methods, else the candidate's."""
    if method != CANDIDATE:
        return structured._structured_runnable(model, schema, ctx, method)
    body = {"response_format": {"type": "json_object", "schema": schema.model_json_schema()}}
    return grading._bind_request(model, model, ctx.settings.max_tokens, body)


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


def evict_prompt_cache(base_url: str) -> None:
    """One untimed, one-token request with another prompt: the next call reads its whole prompt again."""
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    httpx.post(f"{base_url}/chat/completions", json=body, timeout=120).raise_for_status()


async def one(
    model: Any,
    ctx: grading.GradingContext,
    method: str,
    schema: type[BaseModel],
    msgs: list[BaseMessage],
    expected: bool,
) -> dict[str, Any]:
    """One grading call, recorded in detail."""
    began = time.monotonic()
    try:
        reply = await asyncio.wait_for(runnable_for(model, schema, ctx, method).ainvoke(msgs), ctx.settings.timeout)
    except Exception as exc:  # noqa: BLE001 - recorded, this is a measurement
        status = getattr(exc, "status_code", "")
        return {"error": f"{type(exc).__name__} {status}".strip(), "seconds": time.monotonic() - began}
    seconds = time.monotonic() - began
    payloads = structured._reply_payloads(reply)
    raw = " | ".join(p if isinstance(p, str) else str(p) for p in payloads)
    obj = next((o for p in payloads if (o := parse_model(schema, p)) is not None), None)
    loose = None if obj is not None else parse_yes_no(raw)
    value = getattr(obj, FIELDS[schema]) if obj is not None else loose
    usage = getattr(reply, "usage_metadata", None) or {}
    return {
        "grader": schema.__name__,
        "shape": shape(reply),
        "schema_parsed": obj is not None,
        "loose_parsed": loose is not None,
        "correct": value == expected if schema is grading.RelevanceGrade else None,
        "seconds": seconds,
        "out_tokens": usage.get("output_tokens") or 0,
        "in_tokens": usage.get("input_tokens") or 0,
        "raw": raw[:160],
    }


def summarize(method: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    relevance = [r for r in ok if r["correct"] is not None]
    return {
        "method": method,
        "calls": len(rows),
        "http_errors": len(rows) - len(ok),
        "errors": sorted({r["error"] for r in rows if "error" in r}),
        "shapes": sorted({r["shape"] for r in ok}),
        "schema_parsed": sum(r["schema_parsed"] for r in ok),
        "any_parsed": sum(r["schema_parsed"] or r["loose_parsed"] for r in ok),
        "relevance_right": f"{sum(bool(r['correct']) for r in relevance)}/{len(relevance)}",
        "median_s": round(statistics.median(r["seconds"] for r in rows), 2),
        "mean_s": round(statistics.mean(r["seconds"] for r in rows), 2),
        "mean_out_tokens": round(statistics.mean(r["out_tokens"] for r in ok), 1) if ok else 0,
        "max_out_tokens": max((r["out_tokens"] for r in ok), default=0),
        "mean_in_tokens": round(statistics.mean(r["in_tokens"] for r in ok), 1) if ok else 0,
        "sample": ok[0]["raw"] if ok else "",
    }


def markdown(table: list[dict[str, Any]], cap: int) -> str:
    lines = [
        f"| method (cap {cap} tokens) | calls | HTTP errors | reply shape | schema parsed | any parse "
        "| relevance right | median s | mean s | mean tokens out | max tokens out | mean tokens in |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table:
        lines.append(
            f"| `{t['method']}` | {t['calls']} | {t['http_errors']} | {', '.join(t['shapes']) or '-'} "
            f"| {t['schema_parsed']} | {t['any_parsed']} | {t['relevance_right']} | {t['median_s']} | {t['mean_s']} "
            f"| {t['mean_out_tokens']} | {t['max_out_tokens']} | {t['mean_in_tokens']} |"
        )
    return "\n".join(lines)


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
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--json", type=Path)
    bench_results.add_option(parser)
    args = parser.parse_args()
    base = RagsExpertSettings()
    async with LocalModelServer(base.local) as server:
        print(f"startup: {server.startup_seconds:.1f}s", file=sys.stderr)
        settings = local_settings(base, server.base_url)
        chat = await plain_chat(settings)
        ctx = grading.GradingContext.from_settings(settings)
        model = build_chat_model(settings.llm)
        rows: dict[str, list[dict[str, Any]]] = {m: [] for m in args.methods}
        for schema, msgs, expected in cases(args.questions, ctx):
            for method in args.methods:
                evict_prompt_cache(server.base_url)
                rows[method].append(await one(model, ctx, method, schema, msgs, expected))
                r = rows[method][-1]
                print(f"  {method} {schema.__name__}: {r.get('error') or r['raw'][:80]!r}", file=sys.stderr)
        table = [summarize(m, rows[m]) for m in args.methods]
        result = {
            "startup_s": round(server.startup_seconds or 0, 1),
            "plain_chat_s": [round(t, 2) for t in chat],
            "grading_max_tokens": settings.grading.max_tokens,
            "methods": table,
        }
    print(markdown(table, settings.grading.max_tokens))
    title = f"Grading calls on the local model by structured-output method (cap {settings.grading.max_tokens} tokens)"
    bench_results.record(args.record, "local_structured_output", title, markdown(table, settings.grading.max_tokens))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
