"""``rags-expert eval QUESTIONS``: how answers are judged (:mod:`rags_expert.evaluation`, docs/evaluation.md)."""

from __future__ import annotations

from pydantic import Field

from rags_expert.settings.base import MAX_SECONDS, SettingsSection


class EvaluationSettings(SettingsSection):
    """The answer judge of an evaluation: a chat model asked whether an answer states the expected fact, for
    questions that give an ``answer`` text and no ``patterns``. Never with ``--local`` (a small model is no judge):
    then containment of the answer text decides, and the report says so."""

    judge: bool = Field(
        True,
        description="Ask the judge model about answers to questions that give only answer text (off: the normalised "
        "answer text must occur in the reply).",
    )
    judge_model: str | None = Field(
        None,
        description="Chat model of the judge on the llm endpoint (None: llm.model); the eval flag --judge-model.",
    )
    judge_timeout: float = Field(
        60.0, gt=0, le=MAX_SECONDS, description="Seconds one judge call may take before the question is unjudged."
    )
