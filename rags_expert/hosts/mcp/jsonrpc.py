"""A JSON-RPC error for every message of ``rags-expert mcp`` that is no valid message, on both transports.

The SDK (2.3) leaves two kinds of input unanswered, so a client waits forever for the answer: text it cannot
parse on stdio becomes an exception item its server ignores (``on_stream_exception`` is not reachable from
``Server.run``), and a request whose id is neither a string nor an integer (an object, a list, a float, null, a
boolean) or that has no id parses as a *notification* with the id dropped, which nothing answers (over HTTP:
``202 Accepted`` and nothing more). Every MCP notification's method starts with ``notifications/``, so any other
method without a usable id is an invalid request.

* stdio: :class:`ReplyingReader` wraps the read stream and answers each such line at once with
  ``{"jsonrpc": "2.0", "id": null, "error": ...}`` (``-32700`` for text that is not JSON, ``-32600`` for JSON
  that is no valid message or a request without a usable id), then reads the next line. The server's
  ``run_stdio_async`` (:mod:`rags_expert.hosts.mcp.server`) puts it between the SDK's transport and its server.
* HTTP: :class:`RequestIdCheck` answers a POSTed request without a usable id with ``400`` and the same error
  (the SDK already answers text that is not JSON so).
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCNotification
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _request_without_id(method: str) -> ErrorData:
    """The error for a request (not a ``notifications/`` method) that came without a usable id."""
    text = f"Invalid Request: {method!r} is a request: it needs an id that is a string or an integer"
    return ErrorData(code=INVALID_REQUEST, message=text)


def _error_message(error: ErrorData) -> JSONRPCError:
    """``error`` as a JSON-RPC error whose id is unknown (null)."""
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


def error_reply(item: SessionMessage | Exception) -> SessionMessage | None:
    """The JSON-RPC error answering a stdio ``item`` (its id is unknown: null), or None for a valid message."""
    if isinstance(item, SessionMessage):
        message = item.message
        if not isinstance(message, JSONRPCNotification) or message.method.startswith("notifications/"):
            return None
        error = _request_without_id(message.method)
    elif isinstance(item, ValidationError) and any(e["type"] == "json_invalid" for e in item.errors()):
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return SessionMessage(_error_message(error))


class ReplyingReader:
    """A read stream of session messages that answers (on ``write``) every invalid item instead of passing it."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK reads it when present)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next valid message; each invalid line before it is answered with an error."""
        while True:
            item = await self._inner.receive()
            reply = error_reply(item)
            if reply is None:
                return item
            await self._write.send(reply)

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


def request_id_error(body: bytes) -> ErrorData | None:
    """The error for a POSTed JSON-RPC request without a usable id; None for anything else (the SDK's to judge)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(method := data.get("method"), str):
        return None
    if method.startswith("notifications/"):
        return None
    given = data.get("id")
    usable = isinstance(given, str) or (isinstance(given, int) and not isinstance(given, bool))
    return None if usable else _request_without_id(method)


class RequestIdCheck:
    """ASGI middleware: a POST to ``path`` holding a request without a usable id gets ``400`` and the JSON-RPC
    error; every other request reaches the app with its body unchanged (bodies over the SDK's limit unread)."""

    def __init__(self, app: ASGIApp, path: str, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.path = path
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read a POST's body, answer it when its id is unusable, else replay it to the app."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path.rstrip("/"):
            await self.app(scope, receive, send)
            return
        read: list[Message] = []
        size, complete = 0, False
        while size <= self.limit:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                complete = size <= self.limit
                break
        error = request_id_error(b"".join(m.get("body", b"") for m in read)) if complete else None
        if error is None:
            await self.app(scope, _replay(read, receive), send)
            return
        body = _error_message(error).model_dump_json(by_alias=True).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _replay(read: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that returns the messages already ``read``, then reads on."""
    pending = list(read)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay
