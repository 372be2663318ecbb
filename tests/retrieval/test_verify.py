"""``verify_citations``: an answer from ``ainvoke`` re-checked after the cited document is edited and re-ingested."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.knowledge_base import ENGINES, make_settings
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, KnowledgeBaseError, close_client
from rags_expert.retrieval.verify import AnswerFormatError, all_good, verify_citations
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

LIGHTHOUSE = (
    "# Oskar lighthouse\n\n"
    "The Oskar lighthouse was first lit in 1874. Its keeper for twenty years was Mara Lind.\n\n"
    "Its lamp burns whale oil.\n"
)
ANSWER = "The lighthouse was first lit in 1874 [1]. Mara Lind kept it for twenty years [1]."


@pytest.fixture(params=ENGINES)
async def answered(tmp_path: Path, request):
    """The docs folder, its knowledge base, and an answer (as ``ask --json`` saves it) citing two sentences."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lighthouse.md").write_text(LIGHTHOUSE)
    (docs / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    base = make_settings(tmp_path / "data", engine=request.param)
    kb = KnowledgeBase(base)
    Ingestor(kb).run([docs])
    settings = RagsExpertSettings(store=base.store, embeddings=base.embeddings, llm={"max_retries": 0})
    script = Script(relevance=lambda q, c: "yes" if "lighthouse" in c.lower() else "no", generate=lambda t: ANSWER)
    agent = await RagsExpert(settings, chat_model=ScriptedChatModel(responder=script)).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was the Oskar lighthouse first lit, and who kept it?")]},
        {"configurable": {"thread_id": "t"}},
    )
    message = out["messages"][-1]
    assert message.response_metadata["outcome"] == "success"
    yield docs, kb, {"answer": message.content, **message.response_metadata}
    close_client(base.store)


def _reingest(kb: KnowledgeBase, docs: Path, old: str, new: str) -> None:
    path = docs / "lighthouse.md"
    path.write_text(path.read_text().replace(old, new))
    Ingestor(kb).run([docs])


def _statuses(answer: dict, kb: KnowledgeBase) -> list[str]:
    return [c.status for c in verify_citations(answer, kb)]


async def test_an_unchanged_knowledge_base_verifies_every_citation_ok(answered):
    _, kb, answer = answered
    checks = verify_citations(answer, kb)
    assert [c.status for c in checks] == ["ok", "ok"]
    assert all_good(checks)


async def test_an_edit_elsewhere_in_the_document_moves_the_quotes(answered):
    docs, kb, answer = answered
    _reingest(kb, docs, "whale oil", "paraffin")
    checks = verify_citations(answer, kb)
    assert [c.status for c in checks] == ["moved", "moved"]
    for check in checks:  # the new span holds the same quote
        (stored,) = kb.retrieve_payloads([check.where["uid"]], ["content"])
        quote = next(c["span"]["quote"] for c in answer["citations"] if c["sentence"] == check.sentence)
        assert stored[1]["content"][check.where["start"] : check.where["end"]] == quote
    assert all_good(checks)


async def test_editing_a_cited_sentence_changes_exactly_its_citation(answered):
    docs, kb, answer = answered
    _reingest(kb, docs, "first lit in 1874", "first lit in 1875")
    checks = verify_citations(answer, kb)
    assert [c.status for c in checks] == ["changed", "moved"]
    assert not all_good(checks)


async def test_a_removed_document_makes_its_citations_gone(answered):
    docs, kb, answer = answered
    (docs / "lighthouse.md").unlink()
    Ingestor(kb).run([docs], prune=True)
    assert _statuses(answer, kb) == ["gone", "gone"]


async def test_unsupported_sentences_are_not_checked_and_a_file_without_citations_is_refused(answered):
    _, kb, answer = answered
    answer["citations"].append({"sentence": "It glows green.", "span": None, "unsupported": True})
    assert _statuses(answer, kb) == ["ok", "ok", "unsupported"]
    with pytest.raises(AnswerFormatError, match="no 'citations' list"):
        verify_citations({"answer": "x", "outcome": "success"}, kb)
    assert verify_citations({"answer": "I could not find it.", "outcome": "failure", "sources": []}, kb) == []
    broken = {"citations": [{"sentence": "x", "span": {"uid": "u"}}]}
    with pytest.raises(AnswerFormatError, match="citation 1 has no span"):
        verify_citations(broken, kb)


async def test_a_uid_that_is_no_point_id_is_looked_for_in_its_document(answered):
    _, kb, answer = answered
    answer["citations"][0]["span"]["uid"] = "fallback-chunk-hash"
    assert _statuses(answer, kb) == ["moved", "ok"]


def test_a_missing_collection_is_an_error(tmp_path: Path):
    settings = make_settings(tmp_path / "data", engine="local", collection="absent")
    try:
        with pytest.raises(KnowledgeBaseError, match="'absent' does not exist"):
            verify_citations({"citations": []}, KnowledgeBase(settings))
    finally:
        close_client(settings.store)
