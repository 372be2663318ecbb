"""What a final message's outcome means to a caller: 0 answered, 1 an honest "not found", 2 an error.

``rags-expert ask`` exits with it, ``stale --reask`` and ``eval`` read it; a leaf module (no import) so the CLI
stays fast to start.
"""

from __future__ import annotations

from typing import Any

NOT_FOUND_REASONS = frozenset({"no_relevant_documents", "not_grounded", "not_useful"})
"""Failure reasons that are an honest "not in the knowledge base" (exit 1); the others, ``budget_exceeded``
included (a larger budget might have found an answer), are errors (exit 2)."""


def exit_code(metadata: dict[str, Any]) -> int:
    """0 for an answer, 1 for an honest not-found, 2 when the run failed on an error."""
    if metadata.get("outcome") == "success":
        return 0
    if metadata.get("error") or metadata.get("reason") not in NOT_FOUND_REASONS:
        return 2
    return 1
