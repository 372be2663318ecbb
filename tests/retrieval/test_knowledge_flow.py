"""KnowledgeFlowRetriever against a real local HTTP server that speaks both request generations and injects faults."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rags_expert.retrieval.factory import build_retriever
from rags_expert.retrieval.knowledge_flow import KnowledgeFlowError, KnowledgeFlowRetriever
from rags_expert.settings import KnowledgeBaseSettings, RagsExpertSettings

pytestmark = pytest.mark.integration

V1_HIT = {
    "content": "Qdrant is written in Rust.",
    "file_path": "/kb/qdrant.md",
    "file_name": "qdrant.md",
    "page": 3,
    "uid": "doc-1",
    "modified": "2025-01-01",
    "title": "Qdrant",
    "author": "a",
    "created": "2024-01-01",
    "type": "md",
    "score": 0.91,
    "rank": 1,
    "embedding_model": "m",
    "vector_index": "idx",
    "token_count": 7,
    "retrieved_at": "now",
    "retrieval_session_id": "s",
}
V2_HIT = {
    **V1_HIT,
    "uid": "doc-2",
    "section": "Intro",
    "tag_ids": ["t1"],
    "tag_names": ["tech"],
    "mime_type": "text/markdown",
    "citation_url": "http://x/doc-2",
    "preview_url": "http://x/p",
    "repository": "r",
    "language": "en",
}


class FakeKnowledgeFlow:
    """A knowledge-flow server of one generation; ``faults`` is a queue of responses to give before normal ones."""

    def __init__(self, generation: str) -> None:
        self.generation = generation
        self.faults: list[str] = []
        self.requests: list[tuple[dict, dict]] = []
        self.retry_after = "0.3"  # the Retry-After of a "429-retry-after" fault
        self.release = threading.Event()  # a "held" request is answered once this is set (or the server closes)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((body, dict(self.headers)))
                fault = owner.faults.pop(0) if owner.faults else None
                if self.path != "/kf/v1/vector/search":
                    return self._send(404, {"detail": "Not Found"})
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault in ("500", "503"):
                    return self._send(int(fault), {"detail": "boom"})
                if fault == "429":
                    return self._send(429, {"detail": "slow down"})
                if fault == "429-retry-after":
                    return self._send(429, {"detail": "slow down"}, {"Retry-After": owner.retry_after})
                if fault == "403":
                    return self._send(403, {"detail": "forbidden"})
                if fault == "held":  # slower than any client timeout until the test releases it
                    owner.release.wait(30)
                if fault == "notjson":
                    return self._send(200, b"<html>oops</html>")
                if fault == "dict":
                    return self._send(200, {"hits": []})
                if fault == "badhit":
                    return self._send(200, [{"title": "no content"}])
                need = "query" if owner.generation == "v1" else "question"
                if need not in body:
                    return self._send(
                        422, {"detail": [{"type": "missing", "loc": ["body", need], "msg": "Field required"}]}
                    )
                if owner.generation == "v2" and not 1 <= body["top_k"] <= 100:
                    return self._send(422, {"detail": [{"type": "less_than_equal", "loc": ["body", "top_k"]}]})
                hit = V1_HIT if owner.generation == "v1" else V2_HIT
                return self._send(200, [hit, {**hit, "uid": "doc-9", "content": "Other.", "score": 0.5}])

            def _send(self, status, payload, headers=None):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/kf/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=["v1", "v2"])
def server(request):
    s = FakeKnowledgeFlow(request.param)
    yield s
    s.close()


def _retriever(url: str, **kw) -> KnowledgeFlowRetriever:
    base = {"base_url": url, "retry_base_delay": 0.01, "timeout": 2.0}
    base.update({key.removeprefix("kf_"): value for key, value in kw.items() if key.startswith("kf_")})
    retrieval = {key: value for key, value in kw.items() if not key.startswith("kf_")}
    return KnowledgeFlowRetriever.from_settings(KnowledgeBaseSettings(knowledge_flow=base, retrieval=retrieval))


def test_auto_detects_the_generation_and_maps_hits(server):
    r = _retriever(server.url)
    docs = r.invoke("what is qdrant?", top_k=5, library_tags=["tech"])
    assert r.client.api == server.generation
    d = docs[0]
    assert d.page_content == "Qdrant is written in Rust."
    assert d.metadata["source"] == "/kb/qdrant.md" and d.metadata["page"] == 3 and d.metadata["title"] == "Qdrant"
    assert d.metadata["score"] == 0.91 and d.metadata["uid"] == ("doc-1" if server.generation == "v1" else "doc-2")
    assert d.metadata["chunk_id"].startswith("kf:") and d.metadata["chunk_id"] != docs[1].metadata["chunk_id"]
    assert d.metadata["embedding_model"] == "m"
    last = server.requests[-1][0]
    if server.generation == "v1":
        assert last == {"query": "what is qdrant?", "top_k": 5, "tags": ["tech"]}
        assert len(server.requests) == 2  # one v2 try answered 422, then v1
    else:
        assert last == {
            "question": "what is qdrant?",
            "top_k": 5,
            "document_library_tags_ids": ["tech"],
            "search_policy": "hybrid",
        }
        assert d.metadata["tags"] == ["tech"] and d.metadata["section"] == "Intro"
        assert len(server.requests) == 1
    r.invoke("again")  # the detected generation is remembered
    expected_key = "query" if server.generation == "v1" else "question"
    assert expected_key in server.requests[-1][0] and len(server.requests) == (3 if server.generation == "v1" else 2)


def test_explicit_generation_v2_options(server):
    if server.generation == "v1":
        r = _retriever(server.url, kf_api="v2")
        with pytest.raises(KnowledgeFlowError, match="HTTP 422"):
            r.invoke("q")
        return
    r = _retriever(server.url, kf_api="v2")
    r.invoke("q", top_k=500, document_uids=["doc-2"], search_policy="strict")
    body = server.requests[-1][0]
    assert body["top_k"] == 100 and body["document_uids"] == ["doc-2"] and body["search_policy"] == "strict"


def test_v1_filters_document_uids_client_side():
    s = FakeKnowledgeFlow("v1")
    try:
        docs = _retriever(s.url, kf_api="v1").invoke("q", document_uids=["doc-9"])
        assert [d.metadata["uid"] for d in docs] == ["doc-9"]
    finally:
        s.close()


def test_retries_5xx_and_dropped_connections(server):
    server.faults = ["500", "drop", "500"]
    r = _retriever(server.url, kf_api=server.generation, kf_max_retries=3)
    assert len(r.invoke("q")) == 2 and len(server.requests) == 4


def test_rate_limits_are_retried(server):
    server.faults = ["429", "429"]
    r = _retriever(server.url, kf_api=server.generation, kf_max_retries=3)
    assert len(r.invoke("q")) == 2 and len(server.requests) == 3


def _waits(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The waits the retriever chose before its retries, as its warnings say them."""
    return [r.getMessage().rsplit(" ", 1)[-1] for r in caplog.records if "retrying in" in r.getMessage()]


def test_rate_limit_waits_for_the_servers_retry_after(server, caplog):
    server.faults = ["429-retry-after"]
    r = _retriever(server.url, kf_api=server.generation, kf_max_retries=3)
    assert len(r.invoke("q")) == 2 and len(server.requests) == 2
    assert _waits(caplog) == ["0.30s"]  # the server's Retry-After, not our 10 ms backoff


def test_a_retry_after_longer_than_the_timeout_is_capped_at_it(server, caplog):
    server.faults, server.retry_after = ["429-retry-after"], "60"
    r = _retriever(server.url, kf_api=server.generation, kf_max_retries=3, kf_timeout=1.0)
    assert len(r.invoke("q")) == 2
    assert _waits(caplog) == ["1.00s"]  # Retry-After 60 s, capped at the 1 s timeout


def test_gives_up_after_the_retry_budget(server):
    server.faults = ["503"] * 5
    r = _retriever(server.url, kf_api=server.generation, kf_max_retries=2)
    with pytest.raises(KnowledgeFlowError, match="HTTP 503 after 3 attempts"):
        r.invoke("q")
    assert len(server.requests) == 3


def test_timeout_is_retried_then_reported(server):
    server.faults = ["held", "held"]
    r = _retriever(server.url, kf_api=server.generation, kf_timeout=0.2, kf_max_retries=1)
    with pytest.raises(KnowledgeFlowError, match="ReadTimeout"):
        r.invoke("q")


@pytest.mark.parametrize(
    "fault,message",
    [("403", "HTTP 403"), ("notjson", "not JSON"), ("dict", "expected a list"), ("badhit", "malformed hit #0")],
)
def test_other_4xx_and_malformed_bodies_are_clear_errors(server, fault, message):
    server.faults = [fault]
    r = _retriever(server.url, kf_api=server.generation, kf_token="s3cret-token")
    with pytest.raises(KnowledgeFlowError, match=message) as info:
        r.invoke("q")
    assert "s3cret-token" not in str(info.value) and len(server.requests) == 1


def test_bearer_token_is_sent(server):
    _retriever(server.url, kf_api=server.generation, kf_token="tok").invoke("q")
    assert server.requests[-1][1]["Authorization"] == "Bearer tok"
    _retriever(server.url, kf_api=server.generation).invoke("q")
    assert "Authorization" not in server.requests[-1][1]


def test_connection_refused_is_reported_after_retries():
    r = _retriever("http://127.0.0.1:9", kf_max_retries=1)
    with pytest.raises(KnowledgeFlowError, match="after 2 attempts: ConnectionError"):
        r.invoke("q")


async def test_ainvoke_does_not_block_the_event_loop(server):
    """The server answers only when the event loop itself releases it: a blocking ainvoke could never finish."""
    server.faults = ["held"]
    r = _retriever(server.url, kf_api=server.generation, kf_timeout=10, kf_max_retries=0)
    request = asyncio.create_task(r.ainvoke("q", top_k=1))
    for _ in range(1000):  # the loop runs while the request is in flight...
        if server.requests:
            break
        await asyncio.sleep(0.01)
    assert server.requests and not request.done()
    server.release.set()  # ...and it is the loop that lets the server answer
    docs = await request
    assert len(docs) == 1


def test_factory_builds_the_configured_backend(server, tmp_path):
    r = build_retriever(
        RagsExpertSettings(retrieval={"backend": "knowledge_flow"}, knowledge_flow={"base_url": server.url})
    )
    assert isinstance(r, KnowledgeFlowRetriever)
    from rags_expert.retrieval.qdrant import QdrantRetriever

    q = build_retriever(RagsExpertSettings(store={"data_dir": tmp_path}, embeddings={"provider": "wordllama"}))
    assert isinstance(q, QdrantRetriever)
