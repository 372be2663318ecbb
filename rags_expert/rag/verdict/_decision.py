"""Whether an answer is accepted, and if not, why: the body of the ``grade_generation`` node.

The answer is first given citations where it lacks them (:func:`~rags_expert.rag.verdict._evidence.attribute`).
It is then rejected without a grading call when it is empty, or cites no chunk while ``require_citations`` is on;
then an answer that declines or states nothing beyond the question (:mod:`~rags_expert.rag.verdict.cited`) is
rejected in every profile, whatever a grader would say; otherwise the cited text decides (the ``compact`` profile:
:func:`~rags_expert.rag.verdict.cited.cited_verdicts`), or the evidence (the ``small`` profile: :func:`~rags_expert.rag.verdict._evidence.evidence_verdicts`),
or accepts an answer that quotes what it cites (``evidence.verify_answers``: :mod:`~rags_expert.rag.verdict.verified`),
or the two LLM graders decide (grounded, useful). A rejection's ``feedback`` is read by the next generation and by
the rephrasing; its ``failure_reason`` (``not_grounded`` / ``not_useful``) is the run's if it ends here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from rags_expert.citations import cited_numbers, cited_sources, format_context
from rags_expert.events import emit
from rags_expert.evidence import EvidenceScorer
from rags_expert.failsafe import failure
from rags_expert.llm import grading
from rags_expert.llm.grading import Verdict
from rags_expert.outcomes import FailureReason
from rags_expert.rag._shared.context import refined_context
from rags_expert.rag.profiles import ModelProfile
from rags_expert.rag.state import RagState, value
from rags_expert.rag.verdict._evidence import Attribution, attribute, evidence_verdicts
from rags_expert.rag.verdict.cited import DECLINES, RESTATES, cited_verdicts, declines, states_something
from rags_expert.rag.verdict.verified import evidence_accepts
from rags_expert.settings import RagsExpertSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

EMPTY = "the answer was empty"
UNCITED = "the answer cites no chunk; support every claim with the chunk number in brackets, like [1]"
ACCEPTED = Verdict(True, True, "", "")


def cites_a_chunk(answer: str, relevant: Sequence[Document]) -> bool:
    """Whether ``answer`` cites at least one of the ``relevant`` chunks."""
    return bool(cited_numbers(answer, len(relevant)))


@dataclass(frozen=True)
class AnswerJudge:
    """Decides on an answer with one agent's model, graders, evidence, settings and profile."""

    model: BaseChatModel
    grading: grading.GradingContext
    evidence: EvidenceScorer
    settings: RagsExpertSettings
    profile: ModelProfile
    redacted_error: Callable[[BaseException], str]

    async def grade(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """``grade_generation``'s state update: the (re-attributed) answer and the verdicts, or the failure of a
        grading call."""
        answer, relevant = value(state, "answer"), state["relevant"]
        if self.profile.grounded == "cited":
            return self._cited(state, answer, relevant)
        update: dict[str, Any] = {}
        attribution = self._attribution(answer, relevant)
        if attribution is not None and attribution.complete:
            answer = update["answer"] = attribution.text
        if not answer or (self.settings.require_citations and not cites_a_chunk(answer, relevant)):
            feedback = EMPTY if not answer else (attribution.reason if attribution else "") or UNCITED
            return update | rejected(state, feedback, FailureReason.NOT_GROUNDED)
        if declines(answer) or not states_something(answer, state["question"]):  # in every profile, no call
            return update | rejected(state, DECLINES if declines(answer) else RESTATES, FailureReason.NOT_USEFUL)
        if self.profile.grounded == "evidence" and attribution is not None:
            verdicts = await evidence_verdicts(state["question"], attribution, relevant, self.evidence)
            grounded = Verdict(verdicts.grounded, True, "", "" if verdicts.grounded else verdicts.reason)
            useful = Verdict(verdicts.useful, True, "", "" if verdicts.useful else verdicts.reason)
        elif self.settings.evidence.verify_answers and await evidence_accepts(
            state["question"], answer, relevant, self.evidence
        ):  # the answer quotes what it cites: no model call
            emit("answer_verified", generation=value(state, "generations"), by="evidence")
            grounded = useful = ACCEPTED
        else:
            update["llm_calls"] = 2
            results = await self._graded(state, answer, config)
            if failed := next((r for r in results if isinstance(r, BaseException)), None):
                return update | failure(self.redacted_error(failed), FailureReason.LLM_ERROR)
            grounded, useful = results  # type: ignore[assignment]  # no exception left
        return update | verdict_update(state, answer, grounded, useful)

    def _cited(self, state: RagState, answer: str, relevant: Sequence[Document]) -> dict[str, Any]:
        """The ``compact`` profile's verdict, without a call: the answer (its citations moved to the chunks that
        hold its sentences) accepted when it states something its cited spans hold
        (:func:`~rags_expert.rag.verdict.cited.cited_verdicts`)."""
        if not answer:
            return rejected(state, EMPTY, FailureReason.NOT_GROUNDED)
        if declines(answer) or not states_something(answer, state["question"]):  # nothing to offer as a partial
            return rejected(state, DECLINES if declines(answer) else RESTATES, FailureReason.NOT_USEFUL)
        cited = cited_verdicts(state["question"], answer, relevant, self.settings.evidence.min_cited_support)
        emit("answer_support", generation=value(state, "generations"), support=round(cited.support, 3))
        grounded = Verdict(cited.grounded, True, "", "" if cited.grounded else cited.reason)
        useful = Verdict(cited.useful, True, "", "" if cited.useful else cited.reason)
        return {"answer": cited.answer} | verdict_update(state, cited.answer, grounded, useful)

    def _attribution(self, answer: str, relevant: Sequence[Document]) -> Attribution | None:
        """The answer with citations from the evidence, when the profile or ``evidence.attribution`` wants them
        (the small profile re-attributes every answer); None when the answer is left as written."""
        by_evidence = self.profile.grounded == "evidence"
        wanted = by_evidence or self.profile.reattribute
        wanted = wanted or (self.settings.evidence.attribution and not cites_a_chunk(answer, relevant))
        if not answer or not wanted:
            return None
        return attribute(answer, relevant, self.evidence, replace=self.profile.reattribute, prose_only=by_evidence)

    async def _graded(
        self, state: RagState, answer: str, config: RunnableConfig
    ) -> tuple[Verdict | BaseException, Verdict | BaseException]:
        """The two LLM graders' verdicts (concurrent calls) over what the answer read, or their faults."""
        context = format_context(refined_context(state["relevant"], value(state, "strips")))
        return await asyncio.gather(
            grading.grade_grounded(self.model, context, answer, self.grading, config=config),
            grading.grade_useful(self.model, state["question"], answer, self.grading, config=config),
            return_exceptions=True,
        )


def rejected(state: RagState, feedback: str, reason: FailureReason) -> dict[str, Any]:
    """The update of an answer rejected before any verdict: empty, uncited, declining or stating nothing."""
    emit("answer_rejected", generation=value(state, "generations"), feedback=feedback)
    grounded = reason is not FailureReason.NOT_GROUNDED
    return {"grounded": grounded, "useful": False, "feedback": feedback, "failure_reason": reason.value}


def verdict_update(state: RagState, answer: str, grounded: Verdict, useful: Verdict) -> dict[str, Any]:
    """``grade_generation``'s state update of the two verdicts: accept, or the feedback (and partial answer) of a
    rejection."""
    update: dict[str, Any] = {"grounded": grounded.value, "useful": useful.value}
    if not (grounded.value and useful.value):
        emit(
            "answer_rejected",
            generation=value(state, "generations"),
            feedback=grounded.reason or useful.reason or ("not grounded" if not grounded.value else "not useful"),
        )
    if not grounded.value:
        detail = grounded.reason or "it makes claims the chunks do not support"
        return update | {"feedback": f"not grounded: {detail}", "failure_reason": FailureReason.NOT_GROUNDED.value}
    if not useful.value:
        # cited now: later rounds may trim the context and renumber its chunks
        partial, partial_sources = cited_sources(answer, state["relevant"])
        return update | {
            "feedback": f"does not answer the question: {useful.reason or 'information is missing'}",
            "failure_reason": FailureReason.NOT_USEFUL.value,
            "partial_answer": partial,
            "partial_sources": partial_sources,
        }
    return update | {"feedback": "", "failure_reason": ""}
