"""Chat-model construction and fault handling shared by every LLM call.

* :func:`build_chat_model` makes a ``ChatOpenAI`` for any OpenAI-compatible endpoint,
  safe to use from any number of event loops (:class:`LoopLocalAsyncClient`).
* :class:`LazyChatModel` builds one on its first use: a run that never calls the model (``ask --local``'s
  ``small`` profile) never imports ``langchain_openai`` and the ``openai`` SDK (~0.5 s a process).
* :func:`call_model` runs one request with a timeout and retries transient faults
  (rate limits, 5xx, timeouts, connection errors) with :mod:`tenacity` and the shared
  :class:`rags_expert.llm.backoff.wait_backoff` (Retry-After, else capped exponential backoff
  and jitter). When retries run out it raises :class:`LLMCallError`, whose text
  names the error class and never contains a secret.
* :func:`redact` (re-exported from :mod:`rags_expert.secrets`) scrubs secrets from any text.
* :func:`mask_reply`: every reply :func:`call_model` returns has the configured secret values (API keys,
  URL passwords and their Basic-auth forms) masked, so a model that repeats one cannot put it into an answer,
  a grade's feedback, an event, a progress line or a checkpoint: every host shows what the graph made of it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from rags_expert.limits import clip_reply
from rags_expert.llm.backoff import last_failure, retry_after_seconds, wait_backoff
from rags_expert.llm.usage import record as record_usage
from rags_expert.secrets import mask_values, redact, redact_data
from rags_expert.settings import LLMSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)


class LLMCallError(RuntimeError):
    """An LLM request failed for good (retries exhausted or a non-retryable error).

    ``error_class`` is the original exception's class name (e.g. ``RateLimitError``);
    the message is redacted.
    """

    def __init__(self, error_class: str, message: str, attempts: int) -> None:
        self.error_class = error_class
        self.attempts = attempts
        super().__init__(f"{error_class} after {attempts} attempt(s): {message}")


_TRANSIENT_NAMES = {
    "RateLimitError",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "TimeoutError",
    "ConnectError",
    "ReadTimeout",
    "ConnectTimeout",
    "RemoteProtocolError",
}


_REQUEST_INVALID = re.compile(r"validation error.*\(\s*'body'", re.I | re.S)


def is_transient(exc: BaseException) -> bool:
    """Whether a fault is worth retrying: 429, 5xx, timeouts and connection errors.

    A 5xx whose text is a validation error of the request body (llama-cpp-python answers an
    unsupported ``response_format`` that way) is the request's fault: retrying cannot help.
    """
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    if _REQUEST_INVALID.search(str(exc)):
        return False
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and (status == 429 or status == 408 or status >= 500):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def error_class_name(exc: BaseException) -> str:
    """The name that identifies a fault: the SDK's class, not LangChain's wrapper around it.

    ``langchain_openai`` re-raises ``openai.InternalServerError`` as ``OpenAIAPIError`` (and
    ``RateLimitError`` as ``OpenAIRateLimitError``...), subclasses of the SDK classes; the
    first non-LangChain class in the MRO is the meaningful name. Exceptions defined only by
    LangChain keep their own name; ``asyncio.wait_for`` timeouts are ``TimeoutError``.
    """
    if isinstance(exc, asyncio.TimeoutError):
        return "TimeoutError"
    cls = type(exc)
    if cls.__module__.startswith("langchain"):
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("langchain"):
                continue
            if base.__module__ != "builtins":
                return base.__name__
            break
    return cls.__name__


@dataclass(frozen=True)
class RetryPolicy:
    """How :func:`call_model` retries transient faults."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    secrets: tuple[str, ...] = field(default=(), repr=False)
    max_reply_chars: int = LLMSettings.model_fields["max_reply_chars"].default
    """Characters of a reply that are read (``llm.max_reply_chars``): the rest is cut before any parsing."""

    @classmethod
    def from_settings(cls, llm: LLMSettings, secrets: Sequence[str] = ()) -> RetryPolicy:
        return cls(llm.max_retries, llm.retry_base_delay, llm.retry_max_delay, tuple(secrets), llm.max_reply_chars)

    def retrying(self) -> AsyncRetrying:
        """The tenacity loop for one call: transient faults only, ``max_retries`` retries, shared backoff."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_backoff(self.base_delay, self.max_delay),
            retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and is_transient(exc)),
            before_sleep=_log_retry,
            sleep=asyncio.sleep,
            reraise=True,
        )


def _log_retry(state: RetryCallState) -> None:
    """One warning per retry, naming the SDK's error class and the wait."""
    name = error_class_name(last_failure(state))
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning("LLM call failed with %s (attempt %d), retrying in %.2fs", name, state.attempt_number, wait)


async def call_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage] | Any,
    *,
    policy: RetryPolicy,
    timeout: float | None,
    config: RunnableConfig | None = None,
) -> Any:
    """Invoke ``runnable`` once, retrying transient faults; raise :class:`LLMCallError` when it fails for good.

    The reply's tokens are recorded for the running graph node (:func:`rags_expert.llm.usage.record`); its text (and
    its tool calls' strings) is cut to ``policy.max_reply_chars`` before anything parses it.
    """
    retrying = policy.retrying()
    reply: Any = None
    try:
        async for attempt in retrying:
            with attempt:
                coro = runnable.ainvoke(messages, config=config)
                reply = await (asyncio.wait_for(coro, timeout) if timeout else coro)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - every model fault is classified here
        name = error_class_name(exc)
        text = redact(str(exc) or name, policy.secrets)[:500]
        attempts = retrying.statistics.get("attempt_number", 1)
        log.error("LLM call failed for good with %s after %d attempt(s): %s", name, attempts, text)
        raise LLMCallError(name, text, attempts) from None
    record_usage(reply, messages)  # the running node's tokens (rags_expert.llm.usage)
    return mask_reply(clip_reply(reply, policy.max_reply_chars), policy.secrets)


def mask_reply(reply: Any, secrets: Sequence[str]) -> Any:
    """``reply`` with every configured secret value in its text masked: an ``AIMessage`` (content and tool-call
    arguments), or a structured-output dict (its ``raw`` message and ``parsed`` result). Unchanged (the same
    object) when it holds none."""
    if not secrets:
        return reply
    if isinstance(reply, AIMessage):
        content = redact_data(reply.content, lambda t: mask_values(t, secrets))
        calls = [{**c, "args": redact_data(c["args"], lambda t: mask_values(t, secrets))} for c in reply.tool_calls]
        if content == reply.content and calls == reply.tool_calls:
            return reply
        return reply.model_copy(update={"content": content, "tool_calls": calls})
    if isinstance(reply, dict) and ("raw" in reply or "parsed" in reply):
        masked = dict(reply)
        if "raw" in masked:
            masked["raw"] = mask_reply(masked["raw"], secrets)
        if "parsed" in masked:
            masked["parsed"] = _mask_parsed(masked["parsed"], secrets)
        return masked
    return reply


def _mask_parsed(parsed: Any, secrets: Sequence[str]) -> Any:
    """A structured-output result (a pydantic model or a dict) with secret values masked in its strings."""
    if isinstance(parsed, BaseModel):
        texts = {k: v for k, v in vars(parsed).items() if isinstance(v, str)}
        masked = {k: mask_values(v, secrets) for k, v in texts.items()}
        return parsed.model_copy(update=masked) if masked != texts else parsed
    if isinstance(parsed, dict):
        return redact_data(parsed, lambda t: mask_values(t, secrets))
    return parsed


def message_text(message: Any) -> str:
    """The text of a model reply (string content, or the text parts of list content)."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content if p)
    return "" if content is None else str(content)


def _loop_local_client_class() -> type:
    """:class:`LoopLocalAsyncClient`, built on the openai SDK's own async HTTP client class
    (httpx2 for openai>=3, httpx before), so the SDK accepts it as ``http_client``."""
    import openai

    class LoopLocalAsyncClient(openai.DefaultAsyncHttpxClient):  # type: ignore[misc,valid-type]
        """An async HTTP client with one connection pool per event loop.

        An ``httpx`` async connection pool belongs to the event loop that opened its
        connections; reusing it from another loop fails ("bound to a different event loop",
        "Event loop is closed"). The SDK builds requests with this client and sends them
        through the inner client of the running loop, made on first use there; the clients of
        loops that have since closed are dropped. So one chat model (and one agent) can serve a
        host that runs each request under its own ``asyncio.run`` in worker threads.
        """

        def __init__(self, before_request: Callable[[], Awaitable[object]] | None = None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._before_request = before_request
            self._inner_kwargs = kwargs
            self._per_loop: dict[asyncio.AbstractEventLoop, Any] = {}
            self._per_loop_lock = threading.Lock()

        def for_running_loop(self) -> Any:
            """The inner client of the running event loop (created on first use)."""
            loop = asyncio.get_running_loop()
            with self._per_loop_lock:
                client = self._per_loop.get(loop)
                if client is None:
                    for closed in [lp for lp in self._per_loop if lp.is_closed()]:
                        del self._per_loop[closed]  # its connections cannot be used (or awaited) any more
                    client = self._per_loop[loop] = openai.DefaultAsyncHttpxClient(**self._inner_kwargs)
            return client

        async def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if self._before_request is not None:
                await self._before_request()
            return await self.for_running_loop().send(request, **kwargs)

        async def aclose(self) -> None:
            """Close the running loop's pool (the only one that can be awaited here)."""
            with self._per_loop_lock:
                client = self._per_loop.pop(asyncio.get_running_loop(), None)
            if client is not None:
                await client.aclose()
            await super().aclose()

    return LoopLocalAsyncClient


def build_chat_model(
    llm: LLMSettings,
    *,
    client_timeout: float | None = None,
    before_request: Callable[[], Awaitable[object]] | None = None,
) -> BaseChatModel:
    """A ``ChatOpenAI`` for the configured OpenAI-compatible endpoint, usable from any event loop.

    Transport retries are left to :func:`call_model` (one visible retry policy), so the
    client's own ``max_retries`` is 0. Each call's own timeout is enforced by
    :func:`call_model`; ``client_timeout`` (default ``llm.timeout``) is the HTTP client's
    ceiling and should be the largest of the per-call timeouts. The async HTTP client keeps
    one connection pool per event loop (see :func:`_loop_local_client_class`). Streamed replies
    carry the provider's token usage where ``llm.stream_usage`` asks for it (:mod:`rags_expert.llm.usage`).
    ``before_request`` is awaited before every request is sent (``ask --local`` starts its model server there,
    :meth:`rags_expert.local.server.LocalRun.chat_model`).
    """
    from langchain_openai import ChatOpenAI

    timeout = max(llm.timeout, client_timeout or 0.0)
    kwargs: dict[str, Any] = {
        "model": llm.model,
        "temperature": llm.temperature,
        "timeout": timeout,
        "max_retries": 0,
        "http_async_client": _loop_local_client_class()(before_request=before_request, timeout=timeout),
    }
    if llm.base_url:
        kwargs["base_url"] = llm.base_url
    if llm.api_key is not None:
        kwargs["api_key"] = llm.api_key
    elif llm.base_url and not os.environ.get("OPENAI_API_KEY"):
        kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore the key
    if llm.max_tokens:
        kwargs["max_tokens"] = llm.max_tokens
    stream_usage = llm.stream_usage
    if stream_usage is None:  # ChatOpenAI's own rule, which our HTTP client would otherwise turn off
        stream_usage = not llm.base_url and not os.environ.get("OPENAI_BASE_URL")
    kwargs["stream_usage"] = stream_usage
    if llm.legacy_max_tokens:  # the cap in the body too, under the name older servers read; grading
        kwargs["extra_body"] = {"max_tokens": llm.max_tokens}  # calls replace it with their own cap
    try:
        return ChatOpenAI(**kwargs)
    except Exception as exc:  # e.g. no OPENAI_API_KEY at all
        raise ValueError(
            "could not build the chat model: "
            + redact(str(exc))
            + " (set RAGS_EXPERT_LLM__API_KEY or OPENAI_API_KEY, point RAGS_EXPERT_LLM__BASE_URL at an "
            "OpenAI-compatible server, or, on the command line, run offline with the bundled model: --local)"
        ) from None


class LazyChatModel:
    """A chat model built by ``build()`` on first use (any attribute read: ``ainvoke``, ``bind``, a field), once.

    Everything is the built model's: ``model.bind(...)`` binds the real model, so LangChain never sees this
    wrapper. Only ``type(model)`` is its own: :func:`model_class` looks through it (the output cap's binding
    reads the real class's fields).
    """

    def __init__(self, build: Callable[[], BaseChatModel]) -> None:
        self._build: Callable[[], BaseChatModel] | None = build
        self._model: BaseChatModel | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether the model was built (first used)."""
        return self._model is not None

    @property
    def model(self) -> BaseChatModel:
        """The model, built now if it was not yet (an error in building it is raised to every caller)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    assert self._build is not None
                    self._model = self._build()
                    self._build = None
        return self._model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_build", "_model", "_lock"):  # copy/pickle probes, half-built
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"LazyChatModel({self._model!r})" if self._model is not None else "LazyChatModel(not built)"


def model_class(model: Any) -> type:
    """The class of ``model``, or of the model a :class:`LazyChatModel` builds (building it)."""
    return type(model.model) if isinstance(model, LazyChatModel) else type(model)


def bind_output_cap(model: BaseChatModel, runnable: Runnable, cap: int, body: dict[str, Any] | None = None) -> Runnable:
    """``runnable`` (``model``, perhaps with tools bound) with output cap ``cap`` and ``body`` fields in the request.

    ChatOpenAI sends a ``response_format`` argument through the client's strict ``parse()``, which
    raises ``LengthFinishReasonError`` and drops the reply when it hits the cap (measured with
    json_mode on a small local model: 7 of 10 grading calls). The same field sent in the request body
    (``extra_body``) is the identical request, and the truncated reply reaches the tolerant parser.
    A model that already sends its cap in the body (``llm.legacy_max_tokens``) gets this call's cap
    there too, so the endpoint reads the grading cap, not the answer cap.
    """
    body = body or {}
    if "extra_body" not in getattr(model_class(model), "model_fields", {}):
        return runnable.bind(max_tokens=cap, **body)
    extra = dict(getattr(model, "extra_body", None) or {})
    if "max_tokens" in extra:
        extra["max_tokens"] = cap
    extra.update(body)
    return runnable.bind(max_tokens=cap, **({"extra_body": extra} if extra else {}))


__all__ = [
    "AIMessage",
    "LLMCallError",
    "LazyChatModel",
    "RetryPolicy",
    "bind_output_cap",
    "build_chat_model",
    "call_model",
    "mask_reply",
    "error_class_name",
    "model_class",
    "is_transient",
    "message_text",
    "redact",
    "retry_after_seconds",
]
