"""The ``ask`` subcommand of ``rags-expert``: one question through the corrective-RAG agent.

``rags-expert ask "question"`` shows its progress on stderr (searching, grading,
writing, checking, a draft rejected and why) and prints the answer once, when it
has passed its checks, then its sources. Drafts are never printed as answers: a
draft that is later rejected would look like one. Settings come from ``RAGS_EXPERT_*`` environment variables; the flags
below override the common ones.

Exit codes: 0 answered; 1 an honest "not found" (no grounded answer in the
knowledge base); 2 an error (invalid settings or flags, a model or retriever
fault, an invalid request, a question over ``max_question_chars``, the question's budget used up); 130
interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.support import args_settings, question_error, setting_type, text_arg
from rags_expert.hosts.progress import RAG_PROGRESS
from rags_expert.outcomes import exit_code

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from langchain_core.runnables import RunnableConfig

    from rags_expert.local.server import LocalRun
    from rags_expert.rag import RagsExpert
    from rags_expert.settings import RagsExpertSettings

ASK_FLAGS = {
    "model": "llm.model",
    "base_url": "llm.base_url",
    "top_k": "retrieval.top_k",
    "collection": "store.collection",
    "model_path": "local.model_path",
}
"""Flags of ``ask`` and ``eval`` that override settings (argparse dest -> settings path)."""
THREAD_FLAGS = {"checkpointer_url": "checkpointer.url"}
"""Flags of ``ask`` alone: where the conversation threads live."""


async def ask(args: argparse.Namespace) -> int:
    """Answer one question (on a local model started for the call with ``--local``)."""
    from rags_expert.local.server import maybe_local

    settings = cast("RagsExpertSettings", args_settings(args))
    if error := question_error(args.question, settings):
        print(error, file=sys.stderr)
        return 2
    async with maybe_local(settings, args.local, on_demand=True) as local:
        # an empty question ends before any model call: no line announces the model
        if args.local and not args.quiet and not args.json and args.question.strip():
            when = "starting the local model" if starts_now(local) else "the local model starts when first called"
            print(f"[{when}{local_note(settings)}]", file=sys.stderr, flush=True)
        return await answer(args, local)


def starts_now(local: LocalRun[RagsExpertSettings]) -> bool:
    """Whether the reserved local model server starts with the command, beside the agent's build: unless
    ``local.start_on_demand`` and the model profile writes no draft (then its first model request starts it)."""
    from rags_expert.rag.profiles import profile_for

    on_demand = local.settings.local.start_on_demand and not profile_for(local.settings.evidence).draft
    return local.server is not None and not on_demand


def local_note(settings: RagsExpertSettings) -> str:
    """``: SmolLM2-135M-Instruct.Q4_1.gguf, 135M parameters: profile small`` ('' when the model is not found: the
    server's start then says why)."""
    from rags_expert.local.command import LocalModelError
    from rags_expert.local.gguf import local_profile

    try:
        return ": " + local_profile(settings.local)[1]
    except LocalModelError:
        return ""


async def answer(args: argparse.Namespace, local: LocalRun[RagsExpertSettings]) -> int:
    """Answer one question, streaming progress to stderr and printing the checked answer once."""
    from rags_expert.rag import RagsExpert

    # the agent is built while a local model server loads its model (unless it starts on its first request,
    # starts_now); the server then reads the answer prompt's fixed beginning while the graph retrieves and grades
    now = starts_now(local)
    if now and local.server is not None:
        local.server.spawn()
    model = local.chat_model(client_timeout=local.settings.grading.timeout)
    starting = local.ready() if now else asyncio.sleep(0)
    agent, _ = await asyncio.gather(RagsExpert(local.settings, chat_model=model).async_init(), starting)
    try:
        return await _answer(args, agent, local)
    finally:
        await agent.aclose()  # the checkpointer's connections (checkpointer.url)


async def _answer(args: argparse.Namespace, agent: RagsExpert, local: LocalRun[RagsExpertSettings]) -> int:
    """Run the question on ``thread`` through the initialised agent; print the answer; the exit code."""
    warming = asyncio.create_task(agent.warm_up()) if local.server is not None else None
    graph = agent.get_compiled_graph()
    config: RunnableConfig = {"configurable": {"thread_id": args.thread}}
    if args.tags:
        config["configurable"]["library_tags"] = [t for t in args.tags.split(",") if t]
    final = None
    # "tasks" events: one when a node starts (with its input), one when it ends (with its update)
    stream = graph.astream({"messages": [("user", args.question)]}, config, stream_mode="tasks")
    async for event in cast("AsyncIterator[dict[str, Any]]", stream):
        node, ended = event.get("name", ""), "result" in event
        update = dict(event.get("result") or []) if ended else {}
        if not args.json and not args.quiet and (line := RAG_PROGRESS.line(event)):
            print(f"[{line}]", file=sys.stderr, flush=True)
        if ended and node.startswith("finalize_") and update.get("messages"):
            final = update["messages"][-1]
    if warming is not None:  # finished long ago, unless the run never called the model
        warming.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await warming
    if final is None:
        print("error: the run ended without an answer", file=sys.stderr)
        return 2
    meta = final.response_metadata
    if args.json:
        print(json.dumps({"answer": final.content, **meta}, indent=2, default=str))
    else:
        print(final.content)
        for src in meta["sources"]:
            where = src.get("source") or ""
            page = f", p. {src['page']}" if src.get("page") is not None else ""
            fallback = ", fallback source" if src.get("origin") == "fallback" else ""
            print(f"[{src['n']}] {src.get('title') or where}{page} ({where}{fallback})")
            if args.quotes:
                print_quotes(meta.get("citations") or [], src["n"])
        if args.quotes:
            for c in meta.get("citations") or []:
                if c.get("unsupported"):
                    print(f'unsupported: "{c["sentence"]}" (no span of the sources supports it)')
    return exit_code(meta)


def print_quotes(citations: list[dict[str, Any]], n: int) -> None:
    """Under source ``n``: each distinct quote that supports a sentence of the answer (``--quotes``)."""
    quotes = [c["span"]["quote"] for c in citations if c.get("span") and c["span"].get("n") == n]
    for quote in dict.fromkeys(quotes):
        print(f'    "{" ".join(quote.split())}"')


def model_path_option(p: argparse.ArgumentParser) -> None:
    """``--model-path X.gguf``: the local model file (with ``--local``)."""
    p.add_argument(
        "--model-path",
        type=setting_type("local.model_path"),
        help="with --local: the GGUF model file to serve; its size picks the profile (RAGS_EXPERT_LOCAL__MODEL_PATH)",
    )


def register(subparsers: Any) -> None:
    """Add the ``ask`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("ask", help="answer a question from the knowledge base")
    p.add_argument("question", type=text_arg)
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("-k", "--top-k", type=setting_type("retrieval.top_k"), help="chunks retrieved per query")
    p.add_argument("--collection", type=setting_type("store.collection"), help="knowledge-base collection")
    model_path_option(p)
    p.add_argument("--tags", help="comma-separated library tags to filter on")
    p.add_argument("--thread", default="cli", help="conversation thread id")
    p.add_argument(
        "--checkpointer-url",
        type=setting_type("checkpointer.url"),
        help="PostgreSQL URL keeping the threads, shared by every process given it, so a follow-up on --thread "
        "may run in another process (RAGS_EXPERT_CHECKPOINTER__URL, preferred for a password: a command line "
        "is visible to other users; needs the 'postgres' extra). Default: this process's memory",
    )
    p.add_argument("--json", action="store_true", help="print the final message and metadata as JSON")
    p.add_argument(
        "--quotes",
        action="store_true",
        help="print under each source the quote that supports the answer (the span citations; --json has them)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--local",
        action="store_true",
        help="answer offline with a local model server started for this call (needs the 'local' extra)",
    )
    p.set_defaults(func=lambda a: asyncio.run(ask(a)), settings_flags={**ASK_FLAGS, **THREAD_FLAGS})
