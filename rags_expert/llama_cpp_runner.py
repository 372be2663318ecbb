"""``python -m rags_expert.llama_cpp_runner``: llama-cpp-python's OpenAI-compatible server, honouring token caps.

``ChatOpenAI`` (langchain-openai 1.x) sends the output cap as ``max_completion_tokens``, the current
OpenAI name; llama-cpp-python's server (0.3.x) reads only the older ``max_tokens`` and silently ignores
the new one, so every cap we set was dropped and a small model ran on to the context limit (measured:
grading replies of 800-940 tokens under a 48-token cap). This runner builds the very same app
(``llama_cpp.server.app.create_app``) and wraps it in :class:`TokenCapCompat`, which copies
``max_completion_tokens`` into ``max_tokens`` on chat-completion requests. Nothing else changes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_COMPLETION_PATHS = ("/v1/chat/completions", "/v1/completions")


def with_max_tokens(body: bytes) -> bytes:
    """The request body with ``max_tokens`` set from ``max_completion_tokens`` when only the latter is given."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body
    if not isinstance(payload, dict) or payload.get("max_completion_tokens") is None or payload.get("max_tokens"):
        return body
    payload["max_tokens"] = payload["max_completion_tokens"]
    return json.dumps(payload).encode()


class TokenCapCompat:
    """ASGI middleware: rewrite completion request bodies with :func:`with_max_tokens`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") not in _COMPLETION_PATHS:
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before sending its body
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = with_max_tokens(b"".join(chunks))
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, _replay([{"type": "http.request", "body": body}], receive), send)


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    """A ``receive`` that yields ``messages`` first, then defers to ``then`` (e.g. for disconnects)."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive


def main(argv: list[str] | None = None) -> None:
    """Parse the runner's options, build llama-cpp-python's app for one model, serve it with uvicorn."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--model_alias", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, default=4096)
    parser.add_argument("--n_threads", type=int, default=None)
    args = parser.parse_args(argv)
    model = {"model": args.model, "model_alias": args.model_alias, "n_ctx": args.n_ctx, "verbose": False}
    if args.n_threads:
        model |= {"n_threads": args.n_threads, "n_threads_batch": args.n_threads}
    app = create_app(
        server_settings=ServerSettings(host=args.host, port=args.port, interrupt_requests=False),
        model_settings=[ModelSettings(**model)],
    )
    uvicorn.run(TokenCapCompat(app), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
