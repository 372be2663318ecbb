"""A local OpenAI-compatible embeddings server whose answers to marked texts wait for the test.

Real HTTP on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread), so ``embeddings.provider=openai``
with ``embeddings.base_url`` talks to it as to a remote endpoint, from any process.

* ``POST /v1/embeddings``: a deterministic bag-of-words vector (:data:`DIM` floats, normalised) per input
  text, as JSON floats or base64 (what the ``openai`` client asks for by default).
* A request holding a text with :data:`GATE` in it sets :attr:`EmbeddingServer.gated` and is answered only
  after :meth:`EmbeddingServer.release`: an ``ingest`` of such a file stops, deterministically, between two
  of its batches, for as long as the test needs.

Usage::

    with EmbeddingServer() as server:
        env["RAGS_EXPERT_EMBEDDINGS__BASE_URL"] = server.base_url
"""

from __future__ import annotations

import base64
import json
import math
import struct
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 64
GATE = "GATEWORD"


def vector(text: str) -> list[float]:
    """Hashed bag of lower-cased words, L2-normalised (similar texts get similar vectors)."""
    v = [0.0] * DIM
    for word in text.lower().split():
        v[zlib.crc32(word.strip(".,?!").encode()) % DIM] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        texts = body.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        owner = self.server.owner
        if any(GATE in str(t) for t in texts):
            owner.gated.set()
            owner.opened.wait(120)
        if owner.delay_per_text and len(texts) > 1:  # a document batch, not a question: as slow as a real model
            time.sleep(owner.delay_per_text * len(texts))
        data = []
        for i, t in enumerate(texts):
            vec = vector(str(t))
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(struct.pack(f"<{DIM}f", *vec)).decode()
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        payload = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", ""),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: EmbeddingServer


class EmbeddingServer:
    """The embeddings endpoint on a free port of 127.0.0.1 (see the module docstring)."""

    def __init__(self, delay_per_text: float = 0.0) -> None:
        self.delay_per_text = delay_per_text
        """Seconds each text of a batch of several takes to embed (0: at once)."""
        self.gated = threading.Event()
        """Set when a request with a marked text arrived (and waits)."""
        self.opened = threading.Event()
        self._http = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._http.owner = self

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def release(self) -> None:
        """Answer the waiting (and every later) marked request."""
        self.opened.set()

    def __enter__(self) -> EmbeddingServer:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self._http.shutdown()
        self._http.server_close()
