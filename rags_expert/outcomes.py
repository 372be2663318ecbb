"""The vocabulary of how a run ends, in one place: its :class:`Outcome`, its :class:`FailureReason`, and what the
outcome means to a caller (0 answered, 1 an honest "not found", 2 an error).

A final message's metadata carries ``outcome`` and (RAG) ``reason`` / (KG) ``exit_reason``, each a value of these
enums (a ``StrEnum``: it compares and serialises as its string). ``rags-expert ask`` exits with :func:`exit_code`,
``stale --reask``, ``eval`` and the Fred agents read it; a leaf module (no import) so the CLI stays fast to start.
A test (tests/test_outcomes.py) fails when a reason's string is written anywhere else in the package.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """How a run ended: an answer a caller may use, or not."""

    SUCCESS = "success"
    FAILURE = "failure"


class FailureReason(StrEnum):
    """Why a run ended without an answer (the RAG ``reason``, the KG ``exit_reason``)."""

    NO_RELEVANT_DOCUMENTS = "no_relevant_documents"
    """Nothing relevant in the knowledge base (the default when no other reason was set)."""
    NOT_GROUNDED = "not_grounded"
    """The last answer made claims the chunks do not support (or was empty, or cited nothing)."""
    NOT_USEFUL = "not_useful"
    """The last answer was grounded but did not answer the question; or, without a draft (``evidence.draft`` off),
    chunks were relevant but none of their units answers it."""
    NOT_AUTHORIZED = "not_authorized"
    """The answer cited a chunk the user may no longer read: withheld, declined like not-found."""
    BUDGET_EXCEEDED = "budget_exceeded"
    """The question's budget of model calls or tokens is used up (a larger one might have found an answer)."""
    EMPTY_QUESTION = "empty_question"
    QUESTION_TOO_LONG = "question_too_long"
    INVALID_REQUEST = "invalid_request"
    """A per-request option the agent cannot use."""
    LLM_ERROR = "llm_error"
    PROMPT_ERROR = "prompt_error"
    """A prompt template that cannot be rendered."""
    RETRIEVAL_ERROR = "retrieval_error"
    AUTHORIZATION_ERROR = "authorization_error"
    """The host's permission check failed (the graph fails closed)."""
    CHECKPOINTER_ERROR = "checkpointer_error"
    BACKEND_ERROR = "backend_error"
    """The KG agent's graph database could not be reached."""
    MAX_STEPS = "max_steps"
    """The KG agent ran out of attempts without a result good enough."""
    NO_CHAT_MODEL = "no_chat_model"
    """The MCP host has no chat model configured."""


NOT_FOUND_REASONS = frozenset(
    {FailureReason.NO_RELEVANT_DOCUMENTS, FailureReason.NOT_GROUNDED, FailureReason.NOT_USEFUL}
)
"""Failure reasons that are an honest "not in the knowledge base" (exit 1); the others, ``budget_exceeded``
included (a larger budget might have found an answer), are errors (exit 2)."""


def not_found(metadata: dict[str, Any]) -> bool:
    """Whether a final message's metadata is an honest "not found": a not-found reason and no error."""
    return metadata.get("outcome") != Outcome.SUCCESS and (
        not metadata.get("error") and metadata.get("reason") in NOT_FOUND_REASONS
    )


def exit_code(metadata: dict[str, Any]) -> int:
    """0 for an answer, 1 for an honest not-found, 2 when the run failed on an error."""
    if metadata.get("outcome") == Outcome.SUCCESS:
        return 0
    return 1 if not_found(metadata) else 2
