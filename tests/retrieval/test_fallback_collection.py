"""The fallback source as another collection of the embedded knowledge base (``fallback.collection``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.knowledge_base import ENGINES, make_settings
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel


def _folder(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / f"{name}.md").write_text(text)
    return folder


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_second_collection_answers_what_the_first_cannot(tmp_path: Path, engine: str):
    data = tmp_path / "data"
    primary = _folder(tmp_path, "primary", "# Cheese\n\nMura valley cheese is aged for nine months in cellars.\n")
    second = _folder(tmp_path, "second", "# Lighthouse\n\nThe Oskar lighthouse was first lit in 1874.\n")
    for collection, folder in (("primary", primary), ("second", second)):
        kb_settings = make_settings(data, engine=engine, collection=collection)
        Ingestor(KnowledgeBase(kb_settings)).run([folder])
    base = make_settings(data, engine=engine, collection="primary")
    settings = RagsExpertSettings(
        store=base.store,
        embeddings=base.embeddings,
        llm={"max_retries": 0},
        max_rephrases=0,
        fallback={"collection": "second"},
    )
    script = Script(
        relevance=lambda q, c: "yes" if "lighthouse" in c else "no", generate=lambda t: "It was first lit in 1874 [1]."
    )
    try:
        agent = await RagsExpert(settings, chat_model=ScriptedChatModel(responder=script)).async_init()
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [HumanMessage("When was the Oskar lighthouse first lit?")]},
            {"configurable": {"thread_id": "t"}},
        )
    finally:
        close_client(base.store)
    meta = out["messages"][-1].response_metadata
    assert meta["outcome"] == "success", meta
    assert [s["origin"] for s in meta["sources"]] == ["fallback"]
    assert "1874" in meta["sources"][0]["content"]
    assert meta["llm_calls"] <= agent.llm_call_bound(with_history=False) == settings.llm_call_bound(False)
