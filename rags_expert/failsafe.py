"""A RAG node never raises: a fault that survives its retries becomes the failure state.

:func:`fails_as` decorates a node method (of :class:`~rags_expert.rag.nodes.RagNodes` or
:class:`~rags_expert.rag.retrieve.fallback_source.FallbackSource`, anything with a ``redacted_error`` method): a fault of the
kinds it catches ends the node with ``error`` (``ErrorClass: message``, redacted: :func:`redacted_error`) and
``failure_reason``, and the routers send the run to ``finalize_failure``. What an attempt costs whether it
succeeds or not (the LLM call, the loop counter) is the decorator's ``charge``, so a failed call is still
counted. A node whose fault is a value rather than an exception (a grader's verdicts) builds the same update
with :func:`failure`. The graph's other wrapper, :func:`~rags_expert.llm.usage.metered`, sits outside this one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from rags_expert.llm.chat import LLMCallError
from rags_expert.outcomes import FailureReason
from rags_expert.secrets import redact

log = logging.getLogger(__name__)

ERROR_CHARS = 500
"""The most characters of an error's text kept in the state (and so in the failure message)."""

M = TypeVar("M", bound=Callable[..., Awaitable[dict[str, Any]]])


def redacted_error(exc: BaseException, secrets: list[str]) -> str:
    """The ``error`` text of a fault: an LLMCallError's own (already redacted) text, else ``ErrorClass: message``
    with ``secrets`` and credential-shaped tokens masked, cut to :data:`ERROR_CHARS`."""
    if isinstance(exc, LLMCallError):
        return str(exc)
    return redact(f"{type(exc).__name__}: {exc}", secrets)[:ERROR_CHARS]


def failure(error: str, reason: FailureReason) -> dict[str, Any]:
    """The state update that ends a run in ``finalize_failure`` with ``error`` and ``reason`` (its string: the
    state and the final message hold plain strings, which any checkpointer restores)."""
    return {"error": error, "failure_reason": reason.value}


async def guarded(
    call: Callable[[], Awaitable[dict[str, Any]]],
    faults: Mapping[type[BaseException], FailureReason],
    redacted_error: Callable[[BaseException], str],
    *,
    charged: Mapping[str, Any] | None = None,
    reset: Mapping[str, Any] | None = None,
    log_as: str | None = None,
    key: str = "failure_reason",
) -> dict[str, Any]:
    """``call()``'s update, or on a fault of a kind in ``faults`` the update of its reason: ``error`` (the fault as
    ``redacted_error`` words it) and ``key`` (the RAG state's ``failure_reason``; the KG state's ``exit_reason``).

    ``charged`` is part of the update either way; ``reset`` is written on a fault only; ``log_as`` logs the fault
    at ERROR under that phrase. Faults of other kinds pass through. Every node fault of both agents ends here
    (:func:`fails_as`, and the KG reflexion loop's ``_run``)."""
    try:
        update = await call()
    except tuple(faults) as exc:
        reason = next(reason for kind, reason in faults.items() if isinstance(exc, kind))
        error = redacted_error(exc)
        if log_as:
            log.error("%s: %s", log_as, error)
        return dict(charged or {}) | dict(reset or {}) | {"error": error, key: reason.value}
    return dict(charged or {}) | update


def fails_as(
    reason: FailureReason,
    *,
    catch: tuple[type[BaseException], ...] = (Exception,),
    charge: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    reset: Mapping[str, Any] | None = None,
    log_as: str | None = None,
) -> Callable[[M], M]:
    """Decorate a node method so a ``catch`` fault returns :func:`failure` with ``reason`` instead of raising
    (:func:`guarded`, with the method's object's ``redacted_error``).

    ``charge(state)`` is part of the update whether the node succeeds or fails; ``reset`` is written on a
    fault only (e.g. no documents); ``log_as`` logs the fault at ERROR under that phrase. Faults of other
    kinds pass through (to an outer ``fails_as``). The signature is kept, so LangGraph still passes
    ``config`` / ``runtime`` by parameter name.
    """

    def decorate(node: M) -> M:
        @functools.wraps(node)
        async def run(self: Any, state: Mapping[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
            return await guarded(
                lambda: node(self, state, *args, **kwargs),
                dict.fromkeys(catch, reason),
                self.redacted_error,
                charged=charge(state) if charge else None,
                reset=reset,
                log_as=log_as,
            )

        return run  # type: ignore[return-value]

    return decorate
