"""``FredDocumentSearch`` reads the request's search options and hands them to Fred's port under the port's names.

Fred itself (``fred_runtime``) runs only in the Python 3.12 venv (tests/fred/test_fred_pod.py); here a recording
port with the ``DocumentSearchPort.search`` signature stands in for it, so the mapping is checked everywhere.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from rags_expert.fred.search import FredDocumentSearch
from rags_expert.rag.options import ainvoke_retriever
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import RetrievalSettings


class Hit(BaseModel):
    content: str
    uid: str
    title: str = ""
    score: float = 0.0


class Result(BaseModel):
    hits: list[Hit]


class RecordingPort:
    """Answers one hit and records each search's arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def search(self, question: str, **kwargs: Any) -> Result:
        self.calls.append({"question": question, **kwargs})
        return Result(hits=[Hit(content="Castle Varen was built in 1412.", uid="d1", title="castle")])


async def test_the_graphs_search_options_reach_the_port_under_its_names():
    port = RecordingPort()
    search = FredDocumentSearch(port=port, top_k=8)
    options = SearchOptions(top_k=3, library_tags=["lib1"], document_uids=["d1"], search_policy="semantic")
    docs = await ainvoke_retriever(search, "When?", RunnableConfig(), options)
    assert port.calls == [
        {
            "question": "When?",
            "top_k": 3,
            "library_tag_ids": ["lib1"],
            "document_uids": ["d1"],
            "search_policy": "semantic",
        }
    ]
    assert [d.metadata["uid"] for d in docs] == ["d1"]


async def test_absent_options_leave_the_scoping_to_fred_and_top_k_to_the_retriever():
    port = RecordingPort()
    await FredDocumentSearch(port=port, top_k=5).ainvoke("When?")
    assert port.calls == [
        {"question": "When?", "top_k": 5, "library_tag_ids": None, "document_uids": None, "search_policy": None}
    ]


async def test_without_a_top_k_the_search_takes_the_settings_default():
    port = RecordingPort()
    await FredDocumentSearch(port=port).ainvoke("When?")
    assert port.calls[0]["top_k"] == RetrievalSettings().top_k == 4
