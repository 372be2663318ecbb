"""The one structured call every grader makes, and what it needs (:class:`GradingContext`).

:func:`structured_call` asks a chat model for a pydantic schema by the configured method (a forced tool call,
a JSON-schema response format, JSON mode or plain text), with a capped output, the grading timeout and its
tokens kept out of the host's stream; when the endpoint refuses the structured-output request itself, it asks
again in plain text. The reply is read tolerantly (tool-call arguments, then JSON in the text); the graders of
:mod:`rags_expert.llm.grading` turn it into verdicts, scores and rewrites. The structured runnable is built once
per agent and model (:attr:`GradingContext.runnables`).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel

from rags_expert.llm.chat import LLMCallError, RetryPolicy, bind_output_cap, call_model, message_text, model_class
from rags_expert.llm.parsing import parse_model, read_off_loop
from rags_expert.prompts import PromptStore, neutralise
from rags_expert.settings import AgentSettings, GradingSettings, RagsExpertSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StructuredReply(Generic[M]):
    """A structured call's outcome: the validated object (or None) and the reply's raw text."""

    parsed: M | None
    raw: str


@dataclass(frozen=True)
class GradingContext:
    """What every shared call needs besides the model: settings, prompts, retry policy."""

    settings: GradingSettings
    prompts: PromptStore
    retry: RetryPolicy
    runnables: dict[tuple[int, str, str], tuple[BaseChatModel, Runnable]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )
    """The structured-output runnables built so far, by (model, schema, method): binding a schema as a tool
    converts it to JSON schema, which took more client CPU than the rest of a grading call."""

    @classmethod
    def from_settings(cls, settings: AgentSettings | None = None, prompts: PromptStore | None = None) -> GradingContext:
        settings = settings or RagsExpertSettings()
        return cls(
            settings=settings.grading,
            prompts=prompts or PromptStore(settings.prompts, settings.prompt_dir),
            retry=RetryPolicy.from_settings(settings.llm, settings.secrets()),
        )

    def messages(self, key: str, *, trusted: tuple[str, ...] = (), **variables: Any) -> list[BaseMessage]:
        """System prompt plus the rendered template ``key`` as the user turn.

        Every variable is data and is neutralised (it cannot close the prompt's frames), except
        the ``trusted`` ones, which the caller built itself (e.g. an already framed context).
        """
        safe = {k: v if k in trusted or not isinstance(v, str) else neutralise(v) for k, v in variables.items()}
        return [
            SystemMessage(self.prompts.render("grader_system")),
            HumanMessage(self.prompts.render(key, **safe)),
        ]


# --- the one structured call -------------------------------------------------------------------


def _structured_runnable(
    model: BaseChatModel, schema: type[BaseModel], ctx: GradingContext, method: str | None = None
) -> Runnable:
    """``model`` set up to ask for ``schema`` by ``method`` (default: the configured one), output capped;
    built once per agent (the cache keeps the model, so its id cannot be reused while cached)."""
    method = method or ctx.settings.structured_output
    key = (id(model), f"{schema.__module__}.{schema.__qualname__}", method)
    cached = ctx.runnables.get(key)
    if cached is not None and cached[0] is model:
        return cached[1]
    runnable = _bind_structured(model, schema, ctx, method)
    ctx.runnables[key] = (model, runnable)
    return runnable


def _bind_structured(model: BaseChatModel, schema: type[BaseModel], ctx: GradingContext, method: str) -> Runnable:
    """``model`` asking for ``schema`` by ``method`` (a forced tool call, a response format, or plain text)."""
    runnable: Runnable = model
    body: dict[str, Any] = {}
    if method == "function_calling" and "extra_body" in getattr(model_class(model), "model_fields", {}):
        # an OpenAI-compatible client: the same forced tool call, sent as request-body fields. Through the
        # ``tools`` argument the openai SDK re-validates the constant tool definition on every request (a
        # recursive type-driven transform: most of a grading call's client CPU, bench/speed_cost.py)
        tool = convert_to_openai_tool(schema)
        body["tools"] = [tool]
        body["tool_choice"] = {"type": "function", "function": {"name": tool["function"]["name"]}}
    elif method == "function_calling":
        try:
            runnable = model.bind_tools([schema], tool_choice=schema.__name__)
        except Exception as exc:  # noqa: BLE001 - e.g. no tools, or tool_choice by name unsupported
            log.info(
                "structured output %r unavailable for %s (%s); asking in plain text",
                method,
                model_class(model).__name__,
                type(exc).__name__,
            )
    elif method == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
        }
    elif method == "json_mode":
        body["response_format"] = {"type": "json_object"}
    return bind_output_cap(model, runnable, ctx.settings.max_tokens, body)


_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|tool_choice|\btools\b", re.I)


def format_rejected(exc: LLMCallError) -> bool:
    """Whether a failed call was the endpoint refusing the structured-output request itself.

    The error was not retried (it is the request's fault, see :func:`rags_expert.llm.chat.is_transient`)
    and its text names the response format or the tools.
    """
    return exc.attempts == 1 and bool(_FORMAT_WORDS.search(str(exc)))


def _reply_payloads(reply: Any) -> list[Any]:
    """Candidate payloads of a reply, best first: tool-call args, malformed tool-call args, text."""
    payloads: list[Any] = []
    for call in getattr(reply, "tool_calls", None) or []:
        payloads.append(call.get("args"))
    for call in getattr(reply, "invalid_tool_calls", None) or []:
        payloads.append(call.get("args"))
    payloads.append(message_text(reply))
    return [p for p in payloads if p]


async def structured_call(
    model: BaseChatModel,
    schema: type[M],
    messages: Sequence[BaseMessage],
    ctx: GradingContext,
    *,
    config: RunnableConfig | None = None,
) -> StructuredReply[M]:
    """Ask ``model`` for a ``schema`` object; return it (or None) with the reply's raw text.

    One request with capped output tokens and the grading timeout; its tokens are
    kept out of the host's message stream. Raises only LLMCallError.
    """
    config = {**(config or {}), "tags": [*(config or {}).get("tags", []), TAG_NOSTREAM, "rags_expert:grading"]}
    method = ctx.settings.structured_output
    try:
        reply = await call_model(
            _structured_runnable(model, schema, ctx),
            list(messages),
            policy=ctx.retry,
            timeout=ctx.settings.timeout,
            config=config,
        )
    except LLMCallError as exc:
        if method == "text" or ctx.retry.max_retries < 1 or not format_rejected(exc):
            raise
        # The endpoint refused the structured-output request itself (e.g. llama-cpp-python: HTTP 500
        # "response_format.type should be 'text' or 'json_object'"): ask again for plain text. This
        # request takes the place of a retry, so the bound on requests (bound * (1 + max_retries)) holds.
        log.warning("the endpoint rejected structured output %r (%s); asking for plain text", method, exc.error_class)
        fallback_policy = dataclasses.replace(ctx.retry, max_retries=ctx.retry.max_retries - 1)
        reply = await call_model(
            _structured_runnable(model, schema, ctx, "text"),
            list(messages),
            policy=fallback_policy,
            timeout=ctx.settings.timeout,
            config=config,
        )
    # tolerant reading is pure CPU (up to llm.max_reply_chars of text): a long reply is read off the event
    # loop, so a host keeps answering its other requests meanwhile
    payloads = _reply_payloads(reply)
    return await read_off_loop(sum(len(str(p)) for p in payloads), _read_payloads, schema, payloads)


def read_reply(schema: type[M], reply: Any) -> StructuredReply[M]:
    """The ``schema`` object a reply holds (tool-call arguments, then JSON in the text), or None, with its raw text."""
    return _read_payloads(schema, _reply_payloads(reply))


def _read_payloads(schema: type[M], payloads: list[Any]) -> StructuredReply[M]:
    """:func:`read_reply` of a reply's payloads (:func:`_reply_payloads`)."""
    raw = " | ".join(p if isinstance(p, str) else str(p) for p in payloads)
    for payload in payloads:
        if (obj := parse_model(schema, payload)) is not None:
            return StructuredReply(obj, raw)
    return StructuredReply(None, raw)
