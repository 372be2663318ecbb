"""A local rerank server speaking the two common ``/rerank`` APIs, for tests of the rerank client.

Real HTTP on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread):

* ``POST /v1/rerank`` and ``POST /v2/rerank`` (Cohere's shape, also Jina / vLLM / Infinity): ``{"model", "query",
  "documents": [str], "top_n"?}`` → ``{"id", "results": [{"index", "relevance_score"}], "meta"}``, best first,
  ``top_n`` of them;
* ``POST /rerank`` (Hugging Face text-embeddings-inference): ``{"query", "texts": [str], "raw_scores"?,
  "truncate"?}`` → ``[{"index", "score"}]``, best first, every text.

Relevance = the share of the query's words a text holds (a stand-in for a cross-encoder). A missing field gets a
422 as the real servers answer. ``faults`` queues raw answers served first, one per request: ``(status, bytes)``,
or ``(200, bytes)`` for a body that is not JSON, a delay in seconds (``float``) before the normal answer, or a
:class:`Trickle`: a 200 whose body comes one byte per interval (each read ends well within a client's read timeout,
the whole body takes minutes).
Every request is recorded (path, parsed body, headers with lower-case names).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Trickle:
    """A 200 answer whose ``size``-byte JSON body is sent one byte every ``interval`` seconds."""

    size: int = 300
    interval: float = 1.0


Fault = tuple[int, bytes] | float | Trickle


def relevance(query: str, text: str) -> float:
    """The share of the query's words found in ``text``."""
    words = set(re.findall(r"\w+", query.lower())) or {""}
    return len(words & set(re.findall(r"\w+", text.lower()))) / len(words)


def ranked(query: str, texts: list[str]) -> list[tuple[int, float]]:
    """(index, score) of every text, best first (ties in input order)."""
    return sorted(((i, relevance(query, t)) for i, t in enumerate(texts)), key=lambda p: -p[1])


def answer(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """Status and JSON payload of one request in the API its path names."""
    if path in ("/v1/rerank", "/v2/rerank"):
        if not isinstance(body.get("query"), str) or not isinstance(body.get("documents"), list):
            return 422, {"message": "query and documents are required"}
        top_n = body.get("top_n") or len(body["documents"])
        results = [{"index": i, "relevance_score": s} for i, s in ranked(body["query"], body["documents"])[:top_n]]
        return 200, {"id": "r-1", "results": results, "meta": {"billed_units": {"search_units": 1}}}
    if path == "/rerank":
        if not isinstance(body.get("query"), str) or not isinstance(body.get("texts"), list):
            return 422, {
                "error": "Input validation error: `query` and `texts` are required",
                "error_type": "Validation",
            }
        return 200, [{"index": i, "score": s} for i, s in ranked(body["query"], body["texts"])]
    return 404, {"error": "Not Found"}


class RerankServer:
    """The server; see the module docstring."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with owner._lock:
                    owner.requests.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
                    fault = owner.faults.pop(0) if owner.faults else None
                if isinstance(fault, float):
                    time.sleep(fault)
                    fault = None
                if isinstance(fault, Trickle):
                    return self._trickle(fault)
                if fault is not None:
                    return self._send(fault[0], fault[1])
                self._send(*answer(self.path, body))

            def _send(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

            def _trickle(self, trickle: Trickle) -> None:
                data = b'{"results": []' + b" " * max(0, trickle.size - 15) + b"}"
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.flush()
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(trickle.interval)
                except OSError:  # the client closed the connection
                    pass

        return Handler
