"""Per-request scope through the graph with the real embedded Qdrant retriever: ``None`` searches
everything, an empty list scopes the request to nothing (the honest not-found, no search)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, QdrantRetriever, close_client
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

QUESTION = "When was Castle Varen built?"


@pytest.fixture(params=["edge", "local"])
def settings(tmp_path: Path, request) -> RagsExpertSettings:
    s = RagsExpertSettings(
        store={"data_dir": str(tmp_path / "data"), "collection": "scope", "engine": request.param},
        embeddings={"provider": "wordllama"},
        max_rephrases=1,
    )
    yield s
    close_client(s.store)


@pytest.fixture
def retriever(settings: RagsExpertSettings, tmp_path: Path) -> QdrantRetriever:
    castles, cheese = tmp_path / "castles", tmp_path / "cheese"
    castles.mkdir()
    cheese.mkdir()
    (castles / "varen.md").write_text("# Varen\nCastle Varen was built in 1412 by Duke Albrecht on the river Mura.")
    (cheese / "mura.md").write_text("# Cheese\nMura valley cheese is aged for nine months in limestone cellars.")
    kb = KnowledgeBase(settings)
    Ingestor(kb, ["castles"]).run([castles])
    Ingestor(kb, ["cheese"]).run([cheese])
    return QdrantRetriever.from_settings(settings)


class CountingRetriever(QdrantRetriever):
    """The real Qdrant retriever, counting the searches that reach the store."""

    searches: list[dict] = []

    def _search(self, query, options):
        self.searches.append({"library_tags": options.library_tags, "document_uids": options.document_uids})
        return super()._search(query, options)


async def _ask(settings, retriever, **configurable):
    script = Script(
        relevance=lambda q, c: "yes" if "1412" in c else "no", generate=lambda t: "Castle Varen was built in 1412 [1]."
    )
    model = ScriptedChatModel(responder=script)
    agent = await RagsExpert(settings, chat_model=model, retriever=retriever).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t", **configurable}}
    )
    return out["messages"][-1], model


async def test_absent_scope_searches_everything(settings, retriever):
    final, _ = await _ask(settings, retriever)
    assert final.response_metadata["outcome"] == "success"
    assert "1412" in final.content


async def test_tags_scope_the_search(settings, retriever):
    final, _ = await _ask(settings, retriever, library_tags=["castles"])
    assert final.response_metadata["outcome"] == "success"
    final, _ = await _ask(settings, retriever, library_tags=["cheese"])
    assert final.response_metadata["outcome"] == "failure"
    assert final.response_metadata["reason"] == "no_relevant_documents"


@pytest.mark.parametrize(
    "scope", [{"library_tags": []}, {"document_uids": []}, {"library_tags": ["castles"], "document_uids": []}]
)
async def test_empty_scope_is_the_honest_not_found_without_a_search(settings, retriever, scope):
    counting = CountingRetriever(kb=retriever.kb, settings=retriever.settings, searches=[])
    final, model = await _ask(settings, counting, **scope)
    meta = final.response_metadata
    assert (meta["outcome"], meta["reason"], meta["sources"]) == ("failure", "no_relevant_documents", [])
    assert counting.searches == []  # nothing in scope: the store is never asked
    assert model.calls == [] and meta["llm_calls"] == 0  # no grading, no rephrasing
    assert "1412" not in final.content


def test_retriever_itself_finds_nothing_for_an_empty_scope(retriever):
    assert retriever.invoke("castle", library_tags=[]) == []
    assert retriever.invoke("castle", document_uids=[]) == []
    assert {t for d in retriever.invoke("castle built", top_k=5) for t in d.metadata["tags"]} == {"castles", "cheese"}


def test_configured_default_tags_apply_only_when_the_request_names_none(settings, retriever):
    scoped = QdrantRetriever.from_settings(
        settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"library_tags": ["cheese"]})})
    )
    assert {t for d in scoped.invoke("castle built", top_k=5) for t in d.metadata["tags"]} == {"cheese"}
    assert {
        t for d in scoped.invoke("castle built", top_k=5, library_tags=["castles"]) for t in d.metadata["tags"]
    } == {"castles"}
    assert scoped.invoke("castle built", top_k=5, library_tags=[]) == []
