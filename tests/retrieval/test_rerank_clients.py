"""The rerank clients against real HTTP servers on 127.0.0.1: the Cohere and text-embeddings-inference shapes
(tests/helpers/rerank_server.py) and knowledge-flow's ``/vector/rerank`` (tests/helpers/kf_service.py); a server fault
ends in the retrieval order through the stage, logged without the key."""

from __future__ import annotations

import logging
import socket

import pytest
from helpers.kf_service import KnowledgeFlowService
from helpers.rerank_server import RerankServer
from langchain_core.documents import Document

from rags_expert.rag.retrieve.reranking import RerankStage, build_reranker
from rags_expert.retrieval.knowledge_flow import KnowledgeFlowRetriever
from rags_expert.retrieval.rerank.base import RerankError
from rags_expert.retrieval.rerank.http_api import HttpReranker
from rags_expert.settings import RagsExpertSettings, RerankSettings

pytestmark = pytest.mark.integration
KEY = "sk-rerank-Zq81secret"
QUERY = "Who founded the town of Varen?"
TEXTS = [
    "Mura valley cheese is aged for nine months in limestone cellars.",
    "The Mura bridge was completed in 1890 and rebuilt in 1951.",
    "Castle Varen was built in 1412 by Duke Albrecht on the river Mura.",
    "Duke Albrecht ruled from 1398 to 1431 and founded the town of Varen.",
]
DOCS = [Document(t, metadata={"chunk_id": f"c{i}"}) for i, t in enumerate(TEXTS)]
BEST_TWO = [DOCS[3], DOCS[2]]  # by the share of the question's words each holds


@pytest.fixture
def server():
    with RerankServer() as s:
        yield s


def http(url: str, **kw) -> HttpReranker:
    return HttpReranker(RerankSettings(**({"kind": "http", "url": url, "api_key": KEY, "max_retries": 0} | kw)))


@pytest.mark.parametrize(
    ("api", "suffix", "path"),
    [
        ("cohere", "", "/v1/rerank"),
        ("cohere", "/v2", "/v2/rerank"),
        ("tei", "", "/rerank"),
        ("tei", "/rerank", "/rerank"),
    ],
)
async def test_each_api_shape_reorders_the_candidates(server, api, suffix, path):
    reranker = http(server.url + suffix, api=api, model="rerank-v3.5")
    assert await reranker.rerank(QUERY, DOCS, 2) == BEST_TWO
    [(got_path, body, headers)] = server.requests
    assert got_path == path and headers["authorization"] == f"Bearer {KEY}"
    if api == "cohere":
        assert body == {"model": "rerank-v3.5", "query": QUERY, "documents": TEXTS, "top_n": 2}
    else:
        assert body == {"query": QUERY, "texts": TEXTS, "truncate": True}


async def test_cohere_without_a_model_leaves_it_out_and_a_short_result_list_is_completed(server):
    reranker = http(server.url, api="cohere")
    assert await reranker.rerank(QUERY, DOCS, 4) == [DOCS[3], DOCS[2], DOCS[1], DOCS[0]]
    assert "model" not in server.requests[0][1] and server.requests[0][1]["top_n"] == 4


async def test_a_transient_fault_is_retried_then_reranked(server, caplog):
    server.faults.append((503, b'{"error": "overloaded"}'))
    reranker = http(server.url, api="tei", max_retries=1, retry_base_delay=0.01)
    with caplog.at_level(logging.WARNING):
        assert await reranker.rerank(QUERY, DOCS, 2) == BEST_TWO
    assert len(server.requests) == 2 and "HTTP 503 (attempt 1)" in caplog.text and KEY not in caplog.text


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ((500, b'{"error": "CUDA out of memory"}'), "answered HTTP 500"),
        ((502, b"Bad Gateway"), "answered HTTP 502"),
        ((200, b"<html>not json</html>"), "not JSON"),
        ((200, b'{"results": "none"}'), "not an object with a list 'results'"),
        ((200, b'{"results": [{"index": 9, "relevance_score": 1.0}]}'), "index 9"),
        (1.5, "ReadTimeout"),
        (None, "ConnectionError"),
    ],
)
async def test_a_server_fault_keeps_the_retrieval_order_logged_without_the_key(server, caplog, fault, expected):
    url = server.url if fault is not None else closed_port()
    if fault is not None:
        server.faults.append(fault)
    settings = RagsExpertSettings(rerank={"kind": "http", "url": url, "api_key": KEY, "max_retries": 0, "timeout": 0.5})
    stage = RerankStage.from_settings(settings)
    with caplog.at_level(logging.WARNING):
        kept = await stage.apply(QUERY, DOCS, 2)
    assert kept == DOCS[:2]  # the retrieval order, cut to top_k
    [record] = [r for r in caplog.records if "keeping the retrieval order" in r.getMessage()]
    assert expected in record.getMessage() and "reranker http:cohere failed" in record.getMessage()
    assert KEY not in caplog.text


async def test_a_key_in_the_url_never_reaches_the_log(server, caplog):
    server.faults.append((500, b"{}"))
    url = server.url.replace("http://", f"http://user:{KEY}@")
    stage = RerankStage.from_settings(RagsExpertSettings(rerank={"kind": "http", "url": url, "max_retries": 0}))
    with caplog.at_level(logging.WARNING):
        assert await stage.apply(QUERY, DOCS, 3) == DOCS[:3]
    assert "answered HTTP 500" in caplog.text and KEY not in caplog.text


def test_http_without_a_url_is_a_one_line_configuration_error():
    with pytest.raises(RerankError, match=r"^rerank.kind=http needs rerank.url$"):
        build_reranker(RagsExpertSettings(rerank={"kind": "http"}))


# --- knowledge-flow's own reranker ---------------------------------------------------------------


def kf_settings(url: str, **rerank) -> RagsExpertSettings:
    return RagsExpertSettings(
        retrieval={"backend": "knowledge_flow", "top_k": 2},
        knowledge_flow={"base_url": url, "api": "v2", "max_retries": 0},
        rerank={"kind": "knowledge_flow", "candidates": 6, **rerank},
    )


async def test_knowledge_flow_reranks_the_hits_its_search_returned():
    with KnowledgeFlowService("v2") as service:
        settings = kf_settings(service.url)
        stage = RerankStage.from_settings(settings)
        retriever = KnowledgeFlowRetriever.from_settings(settings)
        question = "backup policy restore tests every quarter"
        docs = await retriever.ainvoke("policy", top_k=6)  # every chunk says "policy": ties, corpus order
        kept = await stage.apply(question, docs, 2)
        path, body, _ = service.requests[-1]
    assert path.endswith("/knowledge-flow/v1/vector/rerank")
    assert body["question"] == question and body["top_r"] == 2 and len(body["documents"]) == len(docs) == 6
    assert all({"content", "uid", "title", "score"} <= set(hit) for hit in body["documents"])
    assert [d.page_content for d in kept] == [
        "Restore tests of the backup policy happen every quarter.",
        "Backups run every night; the backup policy keeps 30 days of copies.",
    ]
    assert kept[0] is docs[[d.page_content for d in docs].index(kept[0].page_content)]  # the candidates themselves


async def test_knowledge_flow_rerank_fault_keeps_the_search_order(caplog):
    with KnowledgeFlowService("v2") as service:
        docs = [Document(t, metadata={"uid": "u", "title": "t", "score": 0.5}) for t in TEXTS]
        service.faults.append((500, b"Internal Server Error"))
        stage = RerankStage.from_settings(kf_settings(service.url, max_retries=0))
        with caplog.at_level(logging.WARNING):
            assert await stage.apply(QUERY, docs, 2) == docs[:2]
    assert "reranker knowledge_flow failed" in caplog.text


async def test_a_reply_longer_than_the_cap_keeps_the_retrieval_order(server, caplog):
    server.faults.append((200, b'{"results": [' + b" " * 5000 + b"]}"))
    rerank = {"kind": "http", "url": server.url, "api_key": KEY, "max_retries": 0, "max_reply_bytes": 4096}
    stage = RerankStage.from_settings(RagsExpertSettings(rerank=rerank))
    with caplog.at_level(logging.WARNING):
        assert await stage.apply(QUERY, DOCS, 2) == DOCS[:2]
    assert "answered more than 4096 bytes" in caplog.text and KEY not in caplog.text
