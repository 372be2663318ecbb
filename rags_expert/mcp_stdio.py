"""The stdio read stream of ``rags-expert mcp``: a JSON-RPC error reply to every line that is no valid message.

The SDK's stdio reader (SDK 2.3) drops two kinds of line silently, so a client waits forever for the answer:
a line it cannot parse becomes an exception item its server ignores (``on_stream_exception`` is not reachable
from ``Server.run``), and a request whose id is neither a string nor an integer (an object, a list, a float,
null, a boolean) parses as a *notification* with the id dropped, which nothing answers. :class:`ReplyingReader`
wraps the read stream and answers each at once with ``{"jsonrpc": "2.0", "id": null, "error": ...}``:
``-32700`` for text that is not JSON, ``-32600`` for JSON that is no valid message and for a request method
(every MCP notification's method starts with ``notifications/``) without a usable id; then it reads the next
line. The server's ``run_stdio_async`` (:mod:`rags_expert.mcp_server`) puts it between the SDK's stdio transport
and its server.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCNotification
from pydantic import ValidationError


def error_reply(item: SessionMessage | Exception) -> SessionMessage | None:
    """The JSON-RPC error answering ``item`` (its id is unknown: null), or None for a valid message."""
    if isinstance(item, SessionMessage):
        message = item.message
        if not isinstance(message, JSONRPCNotification) or message.method.startswith("notifications/"):
            return None
        text = f"Invalid Request: {message.method!r} is a request: it needs an id that is a string or an integer"
        error = ErrorData(code=INVALID_REQUEST, message=text)
    elif isinstance(item, ValidationError) and any(e["type"] == "json_invalid" for e in item.errors()):
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


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
