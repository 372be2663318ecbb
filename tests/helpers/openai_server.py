"""A local, scripted OpenAI-compatible chat-completions server for integration tests.

Real HTTP on 127.0.0.1 (a free port), stdlib only (``http.server.ThreadingHTTPServer``
in a daemon thread), so LangChain's real ``ChatOpenAI`` / the ``openai`` client talk
to it exactly as to a remote endpoint.

* ``POST /v1/chat/completions``: non-streaming JSON, or SSE chunks when the body
  says ``"stream": true`` (text deltas word by word, tool calls as
  ``delta.tool_calls`` with ``function.arguments`` split into pieces).
* Replies come from ``script(body) -> Reply | str | dict``: a ``str`` is a text
  reply, a ``dict`` is the arguments of a tool call to the (first) requested tool.
  Replies queued with :meth:`OpenAIServer.enqueue` are served first, one per
  request, whatever the request.
* Faults, per reply: any HTTP status (429 with ``Retry-After``, 500 ...), a delay,
  no answer at all until the server stops (``held``: slower than any client timeout,
  however loaded the machine), a malformed JSON body, a tool call with malformed ``arguments``.
* ``delay``: a fixed extra delay for every call (benchmarks).
* Every request is recorded (path, parsed body, headers with lower-case names,
  arrival time) in :attr:`OpenAIServer.requests`; in-flight concurrency is tracked. A request
  the client abandons before its body has arrived (a timeout cancelling it mid-send) is
  neither recorded nor answered, only counted (:attr:`OpenAIServer.incomplete`).

Usage::

    with OpenAIServer(script) as server:
        ChatOpenAI(base_url=server.base_url, api_key="sk-...")
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --- replies ---------------------------------------------------------------------------------


@dataclass
class ToolCall:
    """One tool call of a reply; ``arguments`` is sent verbatim when it is a string (may be malformed)."""

    name: str
    arguments: dict[str, Any] | str

    @property
    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """What the server answers to one request."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    """Sent verbatim instead of a well-formed completion (e.g. malformed JSON)."""
    error_message: str = "scripted error"
    delay: float = 0.0
    """Seconds to wait before answering (on top of the server-wide ``delay``)."""
    usage: dict[str, int] | None = None
    """The ``usage`` block sent instead of the estimate (e.g. a broken provider's negative counts)."""
    top_logprobs: list[tuple[str, float]] | None = None
    """The first token's alternatives as ``(token, logprob)``, sent as OpenAI's ``logprobs`` (the first is the token
    written) when the request asks for log-probabilities (:func:`yes_no`)."""
    gate: threading.Event | None = None
    """Answered only once this event is set (after ``delay``); a gate never set holds the request until the server
    stops: a model slower than any timeout, however loaded the machine (:func:`held`, :func:`gated`)."""


def text(content: str, **kw: Any) -> Reply:
    return Reply(content=content, **kw)


def tool(name: str, arguments: dict[str, Any] | str, **kw: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name, arguments)], **kw)


def yes_no(p_yes: float, **kw: Any) -> Reply:
    """A one-token reply to a yes/no question whose first token is "Yes" with probability ``p_yes`` (and "No" with
    the rest), as llama.cpp's server sends it with ``logprobs``."""
    first, second = (("Yes", p_yes), ("No", 1 - p_yes)) if p_yes >= 0.5 else (("No", 1 - p_yes), ("Yes", p_yes))
    alternatives = [(token, math.log(max(share, 1e-9))) for token, share in (first, second)]
    return Reply(content=first[0], top_logprobs=alternatives, **kw)


def error(status: int, message: str = "scripted error", retry_after: float | None = None, **kw: Any) -> Reply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(status=status, error_message=message, headers=headers, **kw)


def rate_limited(retry_after: float = 1) -> Reply:
    return error(429, "Rate limit reached, please retry later", retry_after=retry_after)


def malformed_json() -> Reply:
    return Reply(raw_body='{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "mess')


def slow(reply: Reply | str, seconds: float) -> Reply:
    reply = text(reply) if isinstance(reply, str) else reply
    reply.delay = seconds
    return reply


def gated(reply: Reply | str, gate: threading.Event) -> Reply:
    """``reply``, sent once ``gate`` is set (see :attr:`Reply.gate`)."""
    reply = text(reply) if isinstance(reply, str) else reply
    reply.gate = gate
    return reply


def held(reply: Reply | str) -> Reply:
    """``reply``, never sent: the request is held until the server stops."""
    return gated(reply, threading.Event())


# --- reading requests ------------------------------------------------------------------------


def message_texts(body: dict[str, Any]) -> list[str]:
    """The text of every message of a chat-completions body, in order."""
    out = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append(content or "")
    return out


def prompt_text(body: dict[str, Any]) -> str:
    return "\n\n".join(message_texts(body))


def requested_tool(body: dict[str, Any]) -> str | None:
    """The name of the tool the request forces (or its first tool), if any."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function", {}).get("name"):
        return choice["function"]["name"]
    tools = body.get("tools") or []
    return tools[0]["function"]["name"] if tools else None


#: JSON keys the packaged prompts ask for, by request kind (see prompts/*.txt).
_KINDS = (
    ('{"relevant": [', "relevance_batch"),
    ('{"relevant"', "relevance"),
    ('{"grounded"', "grounded"),
    ('{"useful"', "useful"),
    ('{"query"', "rephrase"),
    ('{"question"', "condense"),
    ('{"score"', "score"),
    ('{"needed"', "refine"),
    ('{"follow_up"', "hop"),
)
_TOOL_KINDS = {
    "RelevanceGrade": "relevance",
    "RelevantChunks": "relevance_batch",
    "GroundednessGrade": "grounded",
    "UsefulnessGrade": "useful",
    "RephrasedQuery": "rephrase",
    "StandaloneQuestion": "condense",
    "ScoreGrade": "score",
    "NeededStrips": "refine",
    "FollowUpQuery": "hop",
}


def request_kind(body: dict[str, Any]) -> str:
    """``relevance``, ``grounded``, ``useful``, ``rephrase``, ``condense``, ``score``, ``refine``, ``confirm`` (a
    one-token request for log-probabilities: the model asked whether the excerpts state an answer) or ``answer``."""
    if body.get("logprobs") and body.get("top_logprobs"):
        return "confirm"
    if (name := requested_tool(body)) in _TOOL_KINDS:
        return _TOOL_KINDS[name]
    last = message_texts(body)[-1] if body.get("messages") else ""
    for key, kind in _KINDS:
        if key in last:
            return kind
    return "answer"


def tag_content(body: dict[str, Any], tag: str) -> str:
    """The text between ``<tag>`` and ``</tag>`` in the last message ('' if absent)."""
    last = message_texts(body)[-1] if body.get("messages") else ""
    start, end = last.find(f"<{tag}>"), last.find(f"</{tag}>")
    return last[start + len(tag) + 2 : end].strip() if 0 <= start < end else ""


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    at: float
    reply: Reply | None = None
    answered_at: float | None = None
    """When the server began writing the reply (``time.monotonic()``); None while it is held."""

    @property
    def kind(self) -> str:
        return request_kind(self.body)

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)


Script = Callable[[dict[str, Any]], "Reply | str | dict[str, Any]"]


# --- the server ------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle + delayed ACK
    # add ~40 ms to every keep-alive request, which would swamp latency measurements
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802
        owner = self.server.owner
        length = self.headers.get("Content-Length")
        raw = self.rfile.read(int(length)) if length else b""
        if length is None or len(raw) < int(length):
            # The client gave up before the whole request arrived: a request cancelled by its timeout between
            # writing its headers and its body (httpx writes them separately, with a checkpoint between) closes the
            # connection there. No server would answer it, and read as ``{}`` it would be an "answer" request that
            # the script answers, though the client never sent one. Not a request: not recorded, not answered.
            with owner._lock:
                owner.incomplete += 1
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        record = RecordedRequest(
            self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw, time.monotonic()
        )
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        reply = owner._record_and_reply(record)
        owner._enter()
        try:
            if owner._stopping.wait(owner.delay + reply.delay) or not owner._open(reply.gate):
                return  # server shutting down: drop the request
            record.answered_at = time.monotonic()  # before the write: the client cannot see the reply earlier
            self._answer(reply, body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)
        finally:
            owner._leave()

    # -- writing -------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.status != 200:
            err = {"error": {"message": reply.error_message, "type": "scripted", "code": str(reply.status)}}
            self._send_json(reply.status, reply.raw_body if reply.raw_body is not None else err, reply.headers)
            return
        if reply.raw_body is not None:
            self._send_json(200, reply.raw_body, reply.headers)
            return
        model = body.get("model", "scripted")
        if body.get("stream"):
            self._stream(reply, model, body)
        else:
            self._send_json(200, _completion(reply, model, body), reply.headers)

    def _stream(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

        def event(delta: dict[str, Any] | None, finish: str | None = None, usage: dict | None = None) -> None:
            chunk: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
            }
            if delta is not None:
                chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
            if usage is not None:
                chunk["usage"] = usage
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())

        event({"role": "assistant", "content": "" if not reply.tool_calls else None})
        if reply.content:
            words = reply.content.split(" ")
            for i, word in enumerate(words):
                event({"content": word if i == 0 else " " + word})
        for i, call in enumerate(reply.tool_calls):
            event(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{uuid.uuid4().hex[:8]}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            args = call.arguments_text
            for start in range(0, len(args), 8):
                event({"tool_calls": [{"index": i, "function": {"arguments": args[start : start + 8]}}]})
        event({}, "tool_calls" if reply.tool_calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            event(None, usage=_usage(reply, body))
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")  # the terminating zero-length chunk

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _usage(reply: Reply, body: dict[str, Any]) -> dict[str, int]:
    """Token counts like a provider's: the prompt's and the reply's text at ~4 characters a token (or the
    reply's scripted ``usage``)."""
    if reply.usage is not None:
        return dict(reply.usage)
    prompt = 1 + len(prompt_text(body)) // 4 + sum(len(json.dumps(t)) // 4 for t in body.get("tools") or [])
    out = len((reply.content or "").split()) + sum(len(c.arguments_text) // 4 for c in reply.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}


def _completion(reply: Reply, model: str, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_text},
            }
            for c in reply.tool_calls
        ]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
    if reply.top_logprobs and body.get("logprobs"):
        choice["logprobs"] = _logprobs(reply.top_logprobs)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": _usage(reply, body),
    }


def _logprobs(alternatives: list[tuple[str, float]]) -> dict[str, Any]:
    """OpenAI's ``logprobs`` block of a one-token reply: the first alternative written, all of them listed."""
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives]
    return {"content": [{**top[0], "top_logprobs": top}]}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 512  # listen backlog: many clients connecting at once (replicas) are not refused
    owner: OpenAIServer


class OpenAIServer:
    """The scripted server; a context manager that starts and stops it (see module docstring)."""

    def __init__(self, script: Script | None = None, *, delay: float = 0.0) -> None:
        self.script: Script = script or (lambda body: "OK")
        self.delay = delay
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self.incomplete = 0
        """Requests the client abandoned before sending them whole (e.g. cancelled by its timeout): not recorded."""
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wake delayed replies
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -----------------------------------------------------------------------------

    def enqueue(self, *replies: Reply | str) -> None:
        """Serve these replies to the next requests (one each), before asking the script."""
        with self._lock:
            self._queue.extend(text(r) if isinstance(r, str) else r for r in replies)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = 0
            self.incomplete = 0

    def of_kind(self, kind: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == kind]

    def _record_and_reply(self, record: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(record)
            queued = self._queue.popleft() if self._queue else None
        if queued is None:
            try:
                queued = _as_reply(self.script(record.body), record.body)
            except Exception as exc:  # noqa: BLE001 - a broken script shows up as a 500, not a hung test
                queued = error(500, f"script raised {type(exc).__name__}: {exc}")
        record.reply = queued
        return queued

    def _open(self, gate: threading.Event | None) -> bool:
        """Wait for ``gate`` (if any) to be set; False when the server stops first."""
        while gate is not None and not gate.wait(0.05):
            if self._stopping.is_set():
                return False
        return True

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _as_reply(value: Reply | str | dict[str, Any], body: dict[str, Any]) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, dict):
        name = requested_tool(body)
        if name is None:  # no tools offered: answer the JSON as text
            return text(json.dumps(value))
        return tool(name, value)
    return text(str(value))


def castle_script(body: dict[str, Any]) -> Any:
    """A capable model for the one-document "Castle Varen was built in 1412" knowledge base of the CLI tests."""
    kind = request_kind(body)
    if kind == "relevance":
        return {"relevant": "1412" in tag_content(body, "chunk")}
    if kind in ("grounded", "useful"):
        return {kind: True}
    if kind == "rephrase":
        return {"query": "castle construction year"}
    return "Castle Varen was built in 1412 [1]."
