"""The vocabulary of how a run ends, in one place: its :class:`Outcome`, why it ended (:class:`FailureReason`, or the
KG loop's :class:`StopReason`), what kind of answer it gave (:class:`AnswerKind`, :class:`DraftFate`), and what
the outcome means to a caller (:func:`exit_code`: 0 answered, 1 an honest "not found", 2 an error).

A final message's metadata carries ``outcome`` and ``reason`` (:data:`REASON_KEY`, both agents; the KG agent also
writes the same value under ``exit_reason``, its 0.1 key, removed in 0.3), each a value of these enums (a
``StrEnum``: it compares and serialises as its string). ``rags-expert ask`` and ``rags-expert kg`` exit with
:func:`exit_code`, ``stale --reask``, ``eval`` and the Fred agents read it; a leaf module (no import) so the CLI
stays fast to start. A test (tests/test_outcomes.py) fails when one of these strings is written anywhere else in
the package.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal


class Outcome(StrEnum):
    """How a run ended: an answer a caller may use, or not."""

    SUCCESS = "success"
    FAILURE = "failure"


REASON_KEY = "reason"
"""The metadata key of why a run ended, in both agents' final messages."""


class AnswerKind(StrEnum):
    """How the RAG answer was written (metadata ``answer_kind``)."""

    GENERATED = "generated"
    """Written by the chat model over the numbered chunks."""
    EXTRACTIVE = "extractive"
    """A sentence of a chunk quoted and cited by the evidence (no model wrote it)."""


class DraftFate(StrEnum):
    """What became of a speculative draft (state ``speculative``)."""

    KEPT = "kept"
    """Every chunk it cites was graded relevant: it is the answer."""
    DISCARDED = "discarded"


class StopReason(StrEnum):
    """Why the KG loop stopped on a query good enough (its rows decide the outcome)."""

    SCORE = "score"
    """The latest query's score reached ``kg.score_threshold``."""
    NON_EMPTY = "non_empty"
    """The latest query returned rows and ``kg.stop_on_nonempty`` is on."""


OutcomeName = Literal["success", "failure"]
"""The values of :class:`Outcome` as a ``Literal``, for a schema that lists them (the MCP tools' results)."""


class FailureReason(StrEnum):
    """Why a run ended without an answer (the metadata ``reason`` of both agents)."""

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


EndReason = StopReason | FailureReason
"""Every value of a final message's ``reason``."""

NOT_FOUND_REASONS: frozenset[EndReason] = frozenset(
    {
        FailureReason.NO_RELEVANT_DOCUMENTS,
        FailureReason.NOT_GROUNDED,
        FailureReason.NOT_USEFUL,
        FailureReason.MAX_STEPS,
        StopReason.SCORE,
        StopReason.NON_EMPTY,
    }
)
"""Reasons of a failed run that are an honest "not in the knowledge base" (exit 1): the RAG's three, and a KG loop
that stopped (out of steps, or on a query good enough) with no rows. The others, ``budget_exceeded`` included (a
larger budget might have found an answer) and ``backend_error`` (every query failed to reach the database), are
errors (exit 2)."""


def not_found(metadata: dict[str, Any]) -> bool:
    """Whether a final message's metadata is an honest "not found": a not-found reason and no error."""
    return metadata.get("outcome") != Outcome.SUCCESS and (
        not metadata.get("error") and metadata.get(REASON_KEY) in NOT_FOUND_REASONS
    )


def exit_code(metadata: dict[str, Any]) -> int:
    """0 for an answer, 1 for an honest not-found, 2 when the run failed on an error: the exit status of
    ``rags-expert ask`` and ``rags-expert kg``, from a final message's metadata (RAG or KG)."""
    if metadata.get("outcome") == Outcome.SUCCESS:
        return 0
    return 1 if not_found(metadata) else 2
