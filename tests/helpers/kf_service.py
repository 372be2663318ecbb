"""A local knowledge-flow service that answers like the real one (fred's knowledge_flow_backend).

It runs as a real HTTP server on 127.0.0.1 (in a thread of the test process; CLI subprocesses reach it
by URL) and serves ``POST {base}/vector/search``:

* v1 (``{"query", "top_k", "tags"?}``): hits shaped like the measured service, with the string
  ``"Unknown"`` for the metadata it lacks (``file_path``, ``title``, ``author``, ``created``, ``modified``)
  and the real name only in ``file_name``; no document filter; a tag id it does not know makes it fail
  with a plain-text ``500 Internal Server Error`` (every time: the failure is deterministic).
* v2 (``{"question", "top_k" 1-100, "document_library_tags_ids"?, "document_uids"?, "search_policy"?}``):
  the current hit shape (``title`` falls back to the file name, ``unknown_model`` placeholders), filters
  by document server-side; unknown tag ids are intersected away (no hits).

A missing request field gets FastAPI's 422. Hits are ranked by word overlap with the question; an empty
tag list means no filter, as in the real service. ``POST {base}/vector/rerank`` (``{"question", "documents": [hit],
"top_r"}``) answers the hits it was sent, best first by the same overlap, ``top_r`` of them.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

CORPUS = [
    {
        "uid": "48b7sec",
        "file_name": "security_policy.md",
        "tags": ["tag-sec"],
        "content": "Passwords must be rotated every 90 days under the security policy.",
    },
    {
        "uid": "48b7sec",
        "file_name": "security_policy.md",
        "tags": ["tag-sec"],
        "content": "The security policy requires two-factor authentication for remote access.",
    },
    {
        "uid": "77hr",
        "file_name": "holidays.md",
        "tags": ["tag-hr"],
        "content": "Employees get 25 days of paid holidays per year under the policy.",
    },
    {
        "uid": "77hr",
        "file_name": "holidays.md",
        "tags": ["tag-hr"],
        "content": "Holidays policy: unused days expire at the end of March.",
    },
    {
        "uid": "91ops",
        "file_name": "backup.md",
        "tags": ["tag-ops"],
        "content": "Backups run every night; the backup policy keeps 30 days of copies.",
    },
    {
        "uid": "91ops",
        "file_name": "backup.md",
        "tags": ["tag-ops"],
        "content": "Restore tests of the backup policy happen every quarter.",
    },
]
INTERNAL_ERROR = b"Internal Server Error"


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def rank(question: str, chunks: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Chunks by word overlap with the question (stable), with a score in [0, 1]."""
    q = _words(question) or {""}
    scored = [(c, len(q & _words(c["content"])) / len(q)) for c in chunks]
    return sorted(scored, key=lambda cs: -cs[1])


def v1_hit(chunk: dict[str, Any], score: float, n: int) -> dict[str, Any]:
    """A hit as the measured v1 service writes it: "Unknown" wherever it has no metadata."""
    return {
        "content": chunk["content"],
        "file_path": "Unknown",
        "file_name": chunk["file_name"],
        "page": None,
        "uid": chunk["uid"],
        "modified": "Unknown",
        "title": "Unknown",
        "author": "Unknown",
        "created": "Unknown",
        "type": "document",
        "score": score,
        "rank": n,
        "embedding_model": "text-embedding-3-large",
        "vector_index": "in-memory",
        "token_count": len(chunk["content"].split()),
        "retrieved_at": "2025-07-30T10:00:00+00:00",
        "retrieval_session_id": None,
    }


def v2_hit(chunk: dict[str, Any], score: float, n: int) -> dict[str, Any]:
    """A hit as the current service writes it (title falls back to the file name there)."""
    return {
        "content": chunk["content"],
        "page": None,
        "section": None,
        "uid": chunk["uid"],
        "title": chunk["file_name"],
        "author": None,
        "created": None,
        "modified": None,
        "file_name": chunk["file_name"],
        "file_path": None,
        "type": "document",
        "tag_ids": chunk["tags"],
        "tag_names": [],
        "preview_url": f"/documents/{chunk['uid']}",
        "citation_url": f"/documents/{chunk['uid']}",
        "score": score,
        "rank": n,
        "embedding_model": "unknown_model",
        "vector_index": "unknown_index",
        "token_count": None,
        "retrieved_at": "2025-10-30T10:00:00+00:00",
        "retrieval_session_id": None,
    }


class KnowledgeFlowService:
    """The service; ``requests`` records every (path, body, headers); ``faults`` queues raw answers first."""

    def __init__(self, generation: str = "v1", corpus: list[dict[str, Any]] | None = None) -> None:
        self.generation = generation
        self.corpus = corpus if corpus is not None else CORPUS
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.faults: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}/knowledge-flow/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        """The bodies of the search requests received so far."""
        return [body for _, body, _ in self.requests]

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Status and payload (JSON-able, or raw bytes for plain text) for one search request."""
        need = "query" if self.generation == "v1" else "question"
        if not isinstance(body.get(need), str):
            return 422, {"detail": [{"type": "missing", "loc": ["body", need], "msg": "Field required"}]}
        top_k = body.get("top_k", 10)
        if self.generation == "v2" and not 1 <= top_k <= 100:
            return 422, {"detail": [{"type": "less_than_equal", "loc": ["body", "top_k"], "msg": "bad"}]}
        known = {t for c in self.corpus for t in c["tags"]}
        tags = body.get("tags" if self.generation == "v1" else "document_library_tags_ids") or []
        if self.generation == "v1" and any(t not in known for t in tags):
            return 500, INTERNAL_ERROR  # the tag lookup raises; the service answers a bare 500
        pool = [c for c in self.corpus if not tags or set(tags) & set(c["tags"])]
        uids = body.get("document_uids") if self.generation == "v2" else None
        if uids:
            pool = [c for c in pool if c["uid"] in uids]
        make = v1_hit if self.generation == "v1" else v2_hit
        return 200, [make(c, s, n) for n, (c, s) in enumerate(rank(body[need], pool)[:top_k], start=1)]

    def rerank_answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """``POST /vector/rerank {"question", "documents": [hit], "top_r"}``: the hits by word overlap, best first."""
        if not isinstance(body.get("question"), str) or not isinstance(body.get("documents"), list):
            return 422, {"detail": [{"type": "missing", "loc": ["body", "documents"], "msg": "Field required"}]}
        top_r = body.get("top_r", 6)
        return 200, [hit | {"score": s} for hit, s in rank(body["question"], body["documents"])[:top_r]]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with owner._lock:
                    owner.requests.append((self.path, body, dict(self.headers)))
                    fault = owner.faults.pop(0) if owner.faults else None
                if self.path.endswith("/knowledge-flow/v1/vector/rerank"):
                    return self._send(*(fault or owner.rerank_answer(body)))
                if not self.path.endswith("/knowledge-flow/v1/vector/search"):
                    return self._send(404, {"detail": "Not Found"})
                self._send(*(fault or owner.answer(body)))

            def _send(self, status: int, payload: Any) -> None:
                plain = isinstance(payload, bytes)
                data = payload if plain else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8" if plain else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
