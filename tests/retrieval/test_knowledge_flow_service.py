"""KnowledgeFlowRetriever against a local service that answers like the real knowledge-flow (see kf_service)."""

from __future__ import annotations

import pytest
from helpers.kf_service import INTERNAL_ERROR, KnowledgeFlowService
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.retrieval.knowledge_flow import KnowledgeFlowError, KnowledgeFlowRetriever
from rags_expert.settings import KnowledgeBaseSettings
from rags_expert.testing import ScriptedChatModel

pytestmark = pytest.mark.integration
META_FIELDS = (
    "title",
    "source",
    "file_path",
    "author",
    "created",
    "modified",
    "uid",
    "embedding_model",
    "vector_index",
)


@pytest.fixture(params=["v1", "v2"])
def service(request):
    with KnowledgeFlowService(request.param) as s:
        yield s


@pytest.fixture
def v1():
    with KnowledgeFlowService("v1") as s:
        yield s


def retriever(url: str, **kw) -> KnowledgeFlowRetriever:
    """A retriever on ``url``; ``kf_*`` options go to the knowledge_flow section, the rest to retrieval."""
    kf = {key.removeprefix("kf_"): value for key, value in kw.items() if key.startswith("kf_")}
    retrieval = {key: value for key, value in kw.items() if not key.startswith("kf_")}
    return KnowledgeFlowRetriever.from_settings(
        KnowledgeBaseSettings(knowledge_flow={"base_url": url, **kf}, retrieval=retrieval)
    )


def test_placeholders_are_missing_and_names_come_from_file_name(service):
    docs = retriever(service.url).invoke("security policy passwords", top_k=2)
    assert [d.metadata["title"] for d in docs] == ["security_policy.md"] * 2
    assert [d.metadata["source"] for d in docs] == ["security_policy.md"] * 2
    for d in docs:
        assert not any(str(d.metadata.get(f)).lower().startswith("unknown") for f in META_FIELDS), d.metadata
        assert d.metadata["uid"] == "48b7sec" and d.metadata["chunk_id"].startswith("kf:48b7sec:")
    if service.generation == "v1":
        assert docs[0].metadata["author"] is None and docs[0].metadata["file_path"] is None
        assert docs[0].metadata["vector_index"] == "in-memory"  # real values are kept


def test_unknown_tag_id_fails_fast_with_the_body_and_a_hint(v1):
    r = retriever(v1.url)  # default retry settings: 3 retries, 0.5 s doubling
    with pytest.raises(KnowledgeFlowError) as info:
        r.invoke("security policy", library_tags=["security"])
    message = str(info.value)
    assert "HTTP 500 after 2 attempts: 'Internal Server Error'" in message
    assert "tags ['security']" in message and "tag ids, not tag names" in message
    assert [sorted(b) for b in v1.bodies()] == [
        ["document_library_tags_ids", "question", "search_policy", "top_k"],
        ["query", "tags", "top_k"],
        ["query", "tags", "top_k"],
    ]
    # auto-detection's v2 try, then the same 500 twice: a repeated 500 is not retried again (was 4 tries, ~3.5 s)
    assert r.invoke("security policy", library_tags=["tag-sec"])  # a real tag id works


def test_error_body_is_truncated_and_redacted(v1):
    token, password = "s3cret-token-value", "hunter22pw"
    body = f"Internal error: header Authorization=Bearer {token} " + "x" * 2000
    v1.faults = [(500, body.encode())] * 2
    url = v1.url.replace("http://", f"http://admin:{password}@")
    with pytest.raises(KnowledgeFlowError) as info:
        retriever(url, kf_token=token, kf_retry_base_delay=0.01).invoke("q", library_tags=["tag-sec"])
    message = str(info.value)
    assert token not in message and password not in message and "Internal error: header" in message
    assert "…" in message and len(message) < 700 and "x" * 300 not in message


def test_transient_500s_keep_the_full_retry_budget(v1):
    v1.faults = [(500, b"database busy (1)"), (500, b"database busy (2)"), (503, INTERNAL_ERROR)]
    assert retriever(v1.url, kf_api="v1", kf_retry_base_delay=0.01).invoke("backup policy", top_k=1)
    assert len(v1.requests) == 4  # 500s whose bodies differ are not taken as deterministic
    v1.requests.clear()
    v1.faults = [(503, b"Service Unavailable")] * 5
    with pytest.raises(KnowledgeFlowError, match="HTTP 503 after 3 attempts: 'Service Unavailable'$"):
        retriever(v1.url, kf_api="v1", kf_retry_base_delay=0.01, kf_max_retries=2).invoke("q", library_tags=["tag-ops"])
    assert len(v1.requests) == 3  # no tag hint: a 503 is not what an unknown tag gives


def test_v1_document_uids_over_fetch_then_filter(v1):
    docs = retriever(v1.url).invoke("security policy passwords", top_k=2, document_uids=["91ops"])
    assert [d.metadata["uid"] for d in docs] == ["91ops", "91ops"]
    assert v1.bodies()[-1] == {"query": "security policy passwords", "top_k": 10}  # 2 x kf_uid_overfetch_factor
    capped = retriever(v1.url, kf_uid_overfetch_max=3).invoke("security policy", top_k=2, document_uids=["91ops"])
    assert v1.bodies()[-1]["top_k"] == 3 and len(capped) <= 2
    exact = retriever(v1.url, kf_uid_overfetch_factor=1).invoke(
        "security policy passwords", top_k=2, document_uids=["91ops"]
    )
    assert exact == []  # without over-fetch the document's chunks fall below top_k


def test_v2_filters_document_uids_on_the_service():
    with KnowledgeFlowService("v2") as s:
        docs = retriever(s.url).invoke("security policy passwords", top_k=2, document_uids=["91ops"])
        assert [d.metadata["uid"] for d in docs] == ["91ops", "91ops"]
        assert s.bodies()[-1]["top_k"] == 2 and s.bodies()[-1]["document_uids"] == ["91ops"]


async def test_empty_lists_put_nothing_in_scope(service):
    r = retriever(service.url, library_tags=["tag-hr"])
    assert r.invoke("policy", library_tags=[]) == [] and await r.ainvoke("policy", document_uids=[]) == []
    assert service.requests == []  # nothing in scope: no request at all
    default = r.invoke("policy")  # absent: the configured default filter
    assert default and {d.metadata["uid"] for d in default} == {"77hr"}
    unfiltered = retriever(service.url).invoke("policy", top_k=6)
    assert {d.metadata["uid"] for d in unfiltered} == {"48b7sec", "77hr", "91ops"}
    last = service.bodies()[-1]
    assert "tags" not in last and "document_library_tags_ids" not in last and "document_uids" not in last


def _graph_agent(url: str) -> RagsExpert:
    script = Script(
        relevance=lambda q, chunk: "yes" if "rotated" in chunk else "no",
        generate=lambda t: "Passwords are rotated every 90 days [1].",
    )
    return RagsExpert(
        {"llm": {"max_retries": 0}, "retrieval": {"backend": "knowledge_flow"}, "knowledge_flow": {"base_url": url}},
        chat_model=ScriptedChatModel(responder=script),
    )


async def test_graph_sources_show_the_file_name(service):
    agent = await _graph_agent(service.url).async_init()
    config = {"configurable": {"thread_id": "kf"}}
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("How often are passwords rotated?")]}, config
    )
    meta = out["messages"][-1].response_metadata
    assert meta["outcome"] == "success"
    assert [(s["title"], s["source"]) for s in meta["sources"]] == [("security_policy.md", "security_policy.md")]
    assert "Unknown" not in str(meta["sources"])


async def test_graph_with_an_empty_tag_list_finds_nothing(v1):
    agent = await _graph_agent(v1.url).async_init()
    config = {"configurable": {"thread_id": "kf", "library_tags": []}}
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("How often are passwords rotated?")]}, config
    )
    meta = out["messages"][-1].response_metadata
    assert meta["outcome"] == "failure" and meta["sources"] == [] and v1.requests == []
