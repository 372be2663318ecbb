"""The final message of a question: the checked answer with its sources, or the honest failure.

Both finalize nodes build their ``AIMessage`` here. The message's ``response_metadata`` is what hosts
read: ``outcome`` (``success`` / ``failure``), ``sources`` (exactly the cited chunks), ``question``,
``llm_calls``, ``usage`` (calls and tokens, in total and per node: :func:`rags_expert.llm.usage.summary`),
``timings`` (wall and CPU seconds, in total and per node: :func:`rags_expert.rag._shared.timings.summary`); on
success ``answer_kind`` (``generated``, or ``extractive`` for a quoted sentence) and ``citations`` (each answer
sentence with the span of the chunk that supports it, or flagged unsupported: :mod:`rags_expert.rag._shared.spans`); on
failure ``reason`` and, after a fault (the model, the retriever, the checkpointer: ``checkpointer_error``), ``error`` and
``error_class``; after ``budget_exceeded``, ``budget`` (which one, its limit, what was used); ``hops``, the
follow-up searches of a multi-hop question (each source's ``hop`` says which search found it).

:func:`~rags_expert.secrets.redact_message` is what leaves the graph: the message with every configured
secret and credential-shaped token masked in its text and in every string of its metadata (the chunks' text
included), as the MCP server masks its results, so ``ainvoke``, the CLI (text and ``--json``), Fred and
LangGraph Server all show the same.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage

from rags_expert.checkpoints import COMPONENT, FAULT_REASON
from rags_expert.citations import cited_sources
from rags_expert.llm.usage import summary
from rags_expert.outcomes import AnswerKind, FailureReason, Outcome
from rags_expert.prompts import PromptError, PromptStore
from rags_expert.rag._shared import timings
from rags_expert.rag._shared.budget import budget_text, spent_budget
from rags_expert.rag._shared.spans import span_citations
from rags_expert.rag.state import RagState, value

FAULTY: dict[str, str] = {
    FailureReason.PROMPT_ERROR: "the prompt templates",
    FAULT_REASON: COMPONENT,
    FailureReason.AUTHORIZATION_ERROR: "the permission check",
}
"""What failed, by failure reason, when it is not the language model."""


def error_class(error: str) -> str:
    """``"RateLimitError"`` from ``"RateLimitError: ..."``."""
    return error.split(" ", 1)[0].rstrip(":")


def hop_list(state: RagState) -> list[dict[str, Any]]:
    """The follow-up searches of a multi-hop question (:mod:`rags_expert.rag.retrieve.hops`): ``hop``, ``query``, ``bridge``."""
    return [{"hop": h["hop"], "query": h["query"], "bridge": h["bridge"]} for h in value(state, "hops")]


def confirmation(state: RagState) -> dict[str, Any]:
    """``{"confirmation": {"yes", "confidence"}}`` once the model was asked to confirm the answer (``evidence.confirm``:
    its yes-probability and the calibrated probability that the answer is right); else nothing."""
    asked = value(state, "confirmation")
    return {"confirmation": dict(asked)} if asked else {}


def success_message(state: RagState, span_min_support: float) -> AIMessage:
    """The graded answer with exactly the chunks it cites as sources, the span supporting each sentence
    (``evidence.span_min_support``: :func:`rags_expert.rag._shared.spans.span_citations`), and, when the model
    confirmed it (``evidence.confirm``), how sure it was (:func:`confirmation`)."""
    content, sources = cited_sources(state["answer"], state["relevant"])
    return AIMessage(
        content=content,
        response_metadata={
            "outcome": Outcome.SUCCESS.value,
            "answer_kind": value(state, "answer_kind") or AnswerKind.GENERATED.value,
            "sources": sources,
            "citations": span_citations(content, sources, span_min_support),
            "question": state["question"],
            "llm_calls": value(state, "llm_calls"),
            "usage": summary(value(state, "usage"), value(state, "llm_calls")),
            "timings": timings.summary(value(state, "timings")),
            "hops": hop_list(state),
            **confirmation(state),
        },
    )


def failure_message(prompts: PromptStore, state: RagState, redacted_error: Any) -> AIMessage:
    """Say honestly that no grounded answer was found (offering a grounded partial answer).

    A PromptError from any node is a fault of the prompt templates (``prompt_error``), not of the model;
    when a failure template itself cannot be rendered, the packaged one says so. ``redacted_error`` turns
    an exception into the (redacted) ``error`` text.
    """
    question = value(state, "question")
    reason = value(state, "failure_reason") or FailureReason.NO_RELEVANT_DOCUMENTS.value
    error = value(state, "error")
    if error.startswith("PromptError:"):
        reason = FailureReason.PROMPT_ERROR.value
    try:
        content, sources, closest = _failure_content(prompts, state, reason, error)
    except PromptError as exc:  # a broken failure template must not hide the failure
        reason, error, sources, closest = FailureReason.PROMPT_ERROR.value, redacted_error(exc), [], []
        content = PromptStore().render(  # the packaged template
            "failure_error", question=question, component="the prompt templates", error="PromptError"
        )
    metadata: dict[str, Any] = {
        "outcome": Outcome.FAILURE.value,
        "reason": reason,
        "sources": sources,
        "question": question,
        "llm_calls": value(state, "llm_calls"),
        "usage": summary(value(state, "usage"), value(state, "llm_calls")),
        "timings": timings.summary(value(state, "timings")),
    }
    if value(state, "hops"):
        metadata["hops"] = hop_list(state)
    metadata |= confirmation(state)
    if closest:
        metadata["closest"] = closest
    if error:
        metadata["error"] = error
        metadata["error_class"] = error_class(error)
    if reason == FailureReason.BUDGET_EXCEEDED and (spent := spent_budget(state)):
        metadata["budget"] = {"name": spent[0], "limit": spent[1], "used": spent[2]}
    return AIMessage(content, response_metadata=metadata)


def _failure_content(
    prompts: PromptStore, state: RagState, reason: str, error: str
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The failure message for ``reason``, the sources it offers (those of a partial answer, or of the closest
    passages when no answer was found), and those passages (:func:`closest_passages`)."""
    question = value(state, "question")
    sources: list[dict[str, Any]] = []
    closest: list[dict[str, Any]] = []
    if reason == FailureReason.EMPTY_QUESTION:
        content = prompts.render("empty_question")
    elif reason == FailureReason.INVALID_REQUEST:
        content = prompts.render("failure_request", question=question, detail=error.split(":", 1)[1].strip())
    elif reason == FailureReason.QUESTION_TOO_LONG:
        content = prompts.render("failure_too_long", detail=error.split(":", 1)[1].strip())
    elif reason == FailureReason.RETRIEVAL_ERROR:
        detail = error.split(":", 1)[1].strip() if ":" in error else error
        content = prompts.render("failure_retrieval", question=question, error=error_class(error), detail=detail)
    elif reason == FailureReason.BUDGET_EXCEEDED and not error and (spent := spent_budget(state)):
        content = prompts.render(
            "failure_budget",
            question=question,
            budget=budget_text(spent[0], spent[1]),
            partial=_partial(prompts, state),
        )
        sources = list(value(state, "partial_sources")) if value(state, "partial_answer") else []
    elif error and reason != FailureReason.NOT_AUTHORIZED:  # not_authorized: declined like not-found, nothing offered
        component = FAULTY.get(reason, "the language model")
        content = prompts.render("failure_error", question=question, component=component, error=error_class(error))
    elif value(state, "closest") and reason != FailureReason.NOT_AUTHORIZED:  # declined: nothing offered
        offered, sources, closest = closest_passages(prompts, state)
        content = prompts.render("failure_not_found", question=question, partial="") + offered
    else:
        if value(state, "partial_answer"):
            sources = list(value(state, "partial_sources"))
        content = prompts.render("failure_not_found", question=question, partial=_partial(prompts, state))
    return content, sources, closest


def closest_passages(prompts: PromptStore, state: RagState) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The failure's offer of the units closest to an answer (prompt ``failure_closest``), each quoted and cited;
    its sources (the chunks, numbered as cited); and per passage its ``quote``, number ``n`` and ``source``."""
    lines = "\n".join(f"“{c['quote']}” [{c['n']}]" for c in value(state, "closest"))
    text, sources = cited_sources(prompts.render("failure_closest", passages=lines), state["relevant"])
    numbers = [int(n) for n in re.findall(r"” \[(\d+)\]$", text, flags=re.MULTILINE)]
    passages = [
        {"quote": c["quote"], "n": n, "source": sources[n - 1]["source"]}
        for c, n in zip(value(state, "closest"), numbers, strict=True)
    ]
    return text, sources, passages


def _partial(prompts: PromptStore, state: RagState) -> str:
    """The failure text's offer of the best grounded (but not useful) answer so far, or ''."""
    return prompts.render("failure_partial", answer=state["partial_answer"]) if value(state, "partial_answer") else ""
