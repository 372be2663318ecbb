"""Model profiles: which checks of the RAG graph the chat model makes and which the evidence makes.

| check | ``standard`` (API models) | ``small`` (``--local``, SmolLM2-135M) |
|---|---|---|
| chunk relevance | LLM grader | evidence: best sentence's match score ≥ ``evidence.min_relevance`` |
| answer prompt | ``generate`` (whole chunks) | ``generate_small`` (copy the answering words; each chunk's best sentence) |
| citations | the model's; supported sentences of an uncited answer get theirs (``evidence.attribution``) | every sentence re-attributed from the evidence |
| grounded | LLM grader | evidence: every sentence supported by a chunk (≥ ``evidence.min_support``) |
| useful | LLM grader | evidence: holds an answer of the question's type, found in a matching sentence |
| condensing a follow-up | LLM | LLM |
| rephrasing the search | LLM, up to ``max_rephrases`` | none: nothing relevant ends the search (a weak model's rewrite rarely finds more, and costs seconds) |
| another draft after a rejection | up to ``max_generations`` | none: one draft, then the extractive fallback |
| lessons (reflect) | LLM writes one | none (a weak model's advice is noise) |
| extractive fallback | off | on: the best matching sentence, quoted and cited |

The graders of a ~100M-parameter model approve ~75 % of anything (at chance), so for it the evidence
decides; a capable model keeps its own judgement and the evidence only fills in missing citations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rags_expert.settings import EvidenceSettings

Judge = Literal["llm", "evidence"]


@dataclass(frozen=True)
class ModelProfile:
    """The checks one kind of chat model can be trusted with."""

    name: str
    relevance: Judge
    grounded: Judge
    useful: Judge
    answer_prompt: str
    """Prompt key of the answer call."""
    focus_context: bool
    """Show the model only the best-matching sentences of each chunk (``evidence.focus_sentences``)."""
    reattribute: bool
    """Replace the model's own citations by those the evidence finds."""
    answer_stop: tuple[str, ...]
    """Stop sequences of the answer call (the small prompt's one-sentence answer ends at a line break)."""
    rephrase: bool
    """Rephrase the search when nothing relevant was found (else ``max_rephrases`` is 0 for the question)."""
    regenerate: bool
    """Write another draft after a rejected one (else ``max_generations`` is 1 for the question)."""
    write_lessons: bool
    extractive_fallback: bool


PROFILES: dict[str, ModelProfile] = {
    "standard": ModelProfile(
        name="standard",
        relevance="llm",
        grounded="llm",
        useful="llm",
        answer_prompt="generate",
        focus_context=False,
        reattribute=False,
        answer_stop=(),
        rephrase=True,
        regenerate=True,
        write_lessons=True,
        extractive_fallback=False,
    ),
    "small": ModelProfile(
        name="small",
        relevance="evidence",
        grounded="evidence",
        useful="evidence",
        answer_prompt="generate_small",
        focus_context=True,
        reattribute=True,
        answer_stop=("\n",),
        rephrase=False,
        regenerate=False,
        write_lessons=False,
        extractive_fallback=True,
    ),
}


def profile_for(settings: EvidenceSettings) -> ModelProfile:
    """The profile ``settings.profile`` names, with ``settings.extractive_fallback`` applied when set."""
    profile = PROFILES[settings.profile]
    if settings.extractive_fallback is None or settings.extractive_fallback == profile.extractive_fallback:
        return profile
    return ModelProfile(**{**profile.__dict__, "extractive_fallback": settings.extractive_fallback})
