"""The worked extension example (examples/claim_checker.py) runs as a real AgentFlow through ainvoke."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from helpers.documents import KeywordRetriever
from helpers.scripts import Script, between

from rags_expert.agentflow import AgentFlow
from rags_expert.testing import ScriptedChatModel

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claim_checker.py"


def load_example():
    """Import the example from its file, as a reader who copies it would."""
    spec = importlib.util.spec_from_file_location("claim_checker_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def castle_only(question: str, chunk: str) -> str:
    """The relevance grader accepts only the chunk about the castle."""
    return "yes" if "Castle Varen" in chunk else "no"


async def check(claim: str, script: Script, docs, **settings) -> tuple[dict, Script]:
    agent = (
        await load_example()
        .ClaimChecker(
            {"retrieval": {"top_k": 3}, **settings},
            chat_model=ScriptedChatModel(responder=script),
            retriever=KeywordRetriever(docs=docs),
        )
        .async_init()
    )
    try:
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [("user", claim)]}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        await agent.aclose()
    return out, script


def test_example_is_a_small_agent_flow():
    module = load_example()
    assert issubclass(module.ClaimChecker, AgentFlow)
    lines = EXAMPLE.read_text().splitlines()
    assert len(lines) < 100, f"the example must stay under 100 lines (blank ones included), has {len(lines)}"


async def test_supported_claim_cites_the_relevant_chunk(castle_docs):
    out, script = await check(
        "Castle Varen was built in 1412 by Duke Albrecht.", Script(relevance=castle_only), castle_docs
    )
    answer = out["messages"][-1]
    assert answer.content == "Supported by the knowledge base."
    assert answer.response_metadata["supported"] is True
    assert [s["chunk_id"] for s in answer.response_metadata["sources"]] == ["castle"]
    assert script.count("relevance") == 3  # top_k chunks, each graded once
    assert script.count("grounded") == 1


async def test_unsupported_claim_reports_the_graders_reason(castle_docs):
    seen = []

    def grounded(text: str) -> str:
        seen.append(text)
        return '{"grounded": false, "unsupported": "the castle was built in 1412, not 1500"}'

    out, _ = await check(
        "Castle Varen was built in 1500.", Script(relevance=castle_only, grounded=grounded), castle_docs
    )
    answer = out["messages"][-1]
    assert answer.content == "Not supported: the castle was built in 1412, not 1500."
    assert answer.response_metadata["supported"] is False
    # the grader saw the claim as the answer to check and only the relevant chunk as evidence
    assert "Castle Varen was built in 1500." in between(seen[0], "answer")
    assert "Castle Varen was built in 1412" in seen[0] and "cheese" not in seen[0]


async def test_claim_without_evidence_skips_the_groundedness_check(castle_docs):
    out, script = await check("Mura cheese is aged for nine months.", Script(relevance=lambda q, c: "no"), castle_docs)
    answer = out["messages"][-1]
    assert answer.content == "The knowledge base holds nothing about this claim."
    assert answer.response_metadata == {"supported": None, "sources": []}
    assert script.count("grounded") == 0


async def test_example_keeps_its_threads_in_a_fresh_postgres_database(castle_docs, postgres_url):
    """``async_init`` connects the PostgreSQL checkpointer and creates its tables, so the example runs on a new
    database, and an agent started again (a restart) continues the same thread."""
    pg = {"url": postgres_url}
    first, _ = await check(
        "Castle Varen was built in 1412.", Script(relevance=castle_only), castle_docs, checkpointer=pg
    )
    second, _ = await check(
        "Mura cheese is aged for nine months.", Script(relevance=lambda q, c: "no"), castle_docs, checkpointer=pg
    )
    assert len(first["messages"]) == 2
    assert [m.content for m in second["messages"]] == [
        "Castle Varen was built in 1412.",
        "Supported by the knowledge base.",
        "Mura cheese is aged for nine months.",
        "The knowledge base holds nothing about this claim.",
    ]
