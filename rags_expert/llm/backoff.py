"""The one wait strategy every retry loop uses (a :mod:`tenacity` ``wait``).

"Retry-After if the server names one, else capped exponential backoff with jitter":
:class:`wait_backoff` serves both :func:`rags_expert.llm.chat.call_model` (model calls) and
the knowledge-flow retriever, so the two loops cannot drift apart.
"""

from __future__ import annotations

import random
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_base


def retry_after_seconds(failure: Any) -> float | None:
    """The wait a failed response asks for (``Retry-After-Ms`` / ``Retry-After`` in seconds), if any.

    ``failure`` is an exception carrying a ``response`` (the OpenAI SDK's errors) or a
    response itself (``requests``); an HTTP-date value is ignored (our own backoff applies).
    """
    response = getattr(failure, "response", failure)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError):
            continue
        if seconds >= 0:
            return seconds
    return None


def last_failure(state: RetryCallState) -> Any:
    """The failed attempt's exception, or its result (a response judged retryable)."""
    outcome = state.outcome
    if outcome is None:
        return None
    return outcome.exception() if outcome.failed else outcome.result()


class wait_backoff(wait_base):  # tenacity names its wait strategies in lower case
    """Wait before retry n: ``base * 2**(n-1)``, capped at ``cap``, times a jitter in [0.5, 1]
    (when ``jitter``); a longer ``Retry-After`` from the server wins, itself capped at ``cap``."""

    def __init__(self, base: float, cap: float | None = None, *, jitter: bool = True) -> None:
        self.base = base
        self.cap = cap
        self.jitter = jitter

    def _capped(self, seconds: float) -> float:
        return seconds if self.cap is None else min(seconds, self.cap)

    def __call__(self, retry_state: RetryCallState) -> float:
        wait = self._capped(self.base * 2 ** (retry_state.attempt_number - 1))
        if self.jitter:
            wait *= random.uniform(0.5, 1.0)
        hint = retry_after_seconds(last_failure(retry_state))
        if hint is not None:  # the server knows best (429/503)
            wait = max(wait, self._capped(hint))
        return wait


__all__ = ["last_failure", "retry_after_seconds", "wait_backoff"]
