"""The KG agent's exit policy and the choice of the final query.

Exit rules on the latest scored attempt (the base class adds ``llm_error`` before
them and ``max_steps`` after them):

* ``score`` – its score is at least ``kg.score_threshold``;
* ``non_empty`` – it returned rows and ``kg.stop_on_nonempty`` is on (BioChatter's rule).

The final query is always one that was executed: the latest when the loop stopped on
``score``/``non_empty``, otherwise the best that ran (rows first, then score, then the
latest); none when no query ran.
"""

from __future__ import annotations

from typing import Any

from rags_expert.outcomes import StopReason
from rags_expert.settings import KGSettings

SUCCESS_REASONS = frozenset(StopReason)


def exit_rule(attempts: list[dict[str, Any]], kg: KGSettings) -> str | None:
    """``score``, ``non_empty`` or None (also None before the latest attempt is scored)."""
    if not attempts or attempts[-1].get("score") is None:
        return None
    last = attempts[-1]
    if last["score"] >= kg.score_threshold:
        return StopReason.SCORE.value
    if kg.stop_on_nonempty and last["rows"] and not last["error"]:
        return StopReason.NON_EMPTY.value
    return None


def choose_attempt(attempts: list[dict[str, Any]], reason: str) -> dict[str, Any] | None:
    """The attempt whose query and rows become the result (see the module docstring)."""
    if reason in SUCCESS_REASONS and attempts and not attempts[-1]["error"]:
        return attempts[-1]
    ran = [a for a in attempts if not a["error"]]
    if not ran:
        return None
    return max(ran, key=lambda a: (bool(a["rows"]), a["score"] or 0.0, a["step"]))
