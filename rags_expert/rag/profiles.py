"""Model profiles: which checks of the RAG graph the chat model makes and which the evidence makes.

| check | ``standard`` (API models) | ``compact`` (local ~1-3B, e.g. Qwen2.5-1.5B) | ``small`` (``--local``, SmolLM2-135M) |
|---|---|---|---|
| chunk relevance | LLM grader | none: the reranked top chunks go to the writer | evidence: best sentence's match score ≥ ``evidence.min_relevance`` |
| answer prompt | ``generate`` | ``generate_compact`` (one cited sentence on one line, or ``NOT FOUND``) | ``generate_small`` (copy the answering words, one line) |
| knowledge refinement (``refinement.method`` unset) | off: whole chunks | evidence: each chunk's two best sentences, each with the sentence after it; a chunk without the question's names, its first two | evidence: each chunk's best sentence |
| citations | the model's; supported sentences of an uncited answer get theirs (``evidence.attribution``) | the model's, moved to the chunk that holds the sentence | every sentence re-attributed from the evidence |
| grounded | LLM grader | cited text: every fact-stating sentence held by a span of its chunk (≥ ``evidence.min_cited_support``) | evidence: every sentence supported by a chunk (≥ ``evidence.min_support``) |
| useful | LLM grader | states something beyond the question, and does not decline | evidence: holds an answer of the question's type, found in a matching sentence |
| condensing a follow-up | LLM | LLM | LLM |
| rephrasing the search | LLM, up to ``max_rephrases`` | none | none: nothing relevant ends the search (a weak model's rewrite rarely finds more, and costs seconds) |
| a draft by the model (``evidence.draft``) | yes | yes | none: the answer selector's quote is the answer (the model's drafts were kept only where the selector quoted the same unit, and cost ~3 s) |
| another draft after a rejection | up to ``max_generations`` | none | none |
| lessons (reflect) | LLM writes one | none | none (a weak model's advice is noise) |
| extractive fallback | off | on (a second reading): after a rejected or declined answer, the answer selector's quote, or none | on: the best matching sentence, quoted and cited |
| the model confirms the answer given (``evidence.confirm``) | no | yes: one call for one token, its yes-probability calibrated (``evidence.min_confirm``) | no |
| which unit answers (``evidence.reader``) | the evidence's rules | the answer selector | the answer selector (:mod:`rags_expert.evidence.reader`): the most probable unit, or none below its calibrated threshold |
| follow-up search (multi-hop) | LLM proposes the query, or "none" | evidence: the bridge name | evidence: the bridge name of the best sentence; the hop's answer sentence quoted |

An answer that declines, restates the question or stops where its fact should begin is rejected in every profile
without a call (:mod:`rags_expert.rag.verdict.cited`).

The graders of a ~100M-parameter model approve ~75 % of anything (at chance), so for it the evidence
decides; a ~1.5B model reads and writes well enough but grades badly and slowly (docs/local-model.md), so it writes
from the chunks' relevant strips (half the prompt tokens of whole chunks, and as many right answers on dev), the
evidence checks what it cites, where it declines or is rejected the answer selector reads the same chunks
again, and before either answer is given the model is asked whether the chunks state it (a calibrated
yes-probability, :mod:`rags_expert.rag.verdict.confirmed`); a capable model keeps its own judgement and the evidence only fills in
missing citations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from langchain_core.embeddings import Embeddings

from rags_expert.evidence import EvidenceScorer
from rags_expert.evidence.reader.scorer import ReadingScorer
from rags_expert.evidence.text import TermFrequencies
from rags_expert.settings import EvidenceSettings, RagsExpertSettings
from rags_expert.settings.evidence import RefinementMethod

Judge = Literal["llm", "evidence", "retrieval", "cited"]
"""Who decides a check: the chat model, the evidence's rules, the retrieval's ranking (relevance: the top chunks
go to the writer), or the cited text (grounded / useful: :func:`~rags_expert.rag.verdict.cited.cited_verdicts`)."""


@dataclass(frozen=True)
class ModelProfile:
    """The checks one kind of chat model can be trusted with."""

    name: str
    relevance: Judge
    grounded: Judge
    useful: Judge
    answer_prompt: str
    """Prompt key of the answer call."""
    refinement: RefinementMethod
    """How relevant chunks are cut to their relevant strips before the answer, unless ``refinement.method``
    says (:mod:`rags_expert.rag.grade.refinement`)."""
    max_strips: int
    """Strips per chunk the evidence method keeps, unless ``refinement.max_strips`` says."""
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
    draft: bool = True
    """The chat model writes the answer (checked, then accepted or rejected); else the extractive fallback's quote
    is the answer, or the honest failure is."""
    reader: bool = False
    """The answer selector (:mod:`rags_expert.evidence.reader`) chooses the quoted unit, or none; else the evidence's
    rules (``EvidenceScorer.best_answer``)."""
    multihop: Judge = "llm"
    """Who proposes a follow-up search (:mod:`rags_expert.rag.retrieve.hops`): the model, or the evidence's bridge name."""
    chunk_sources: bool = True
    """The answer prompt names each chunk's source (its path or URL) beside its title (a local model pays ~20
    prompt tokens a chunk for a path it does not need: the citations map numbers to sources anyway)."""
    refine_follow: int = 0
    """Strips kept after each strip the evidence method keeps: the answer often follows the sentence that matches
    the question ("The ``--timeout`` option is … restarted. The default timeout is 30 seconds.")."""
    confirm: bool = False
    """Ask the model whether the excerpts state the answer the run would give, and give it only when the calibrated
    probability that it is right reaches ``evidence.min_confirm`` (:mod:`rags_expert.rag.verdict.confirmed`)."""
    refine_unmatched: Literal["whole", "lead"] = "whole"
    """What the evidence method keeps of a chunk it finds no match in (none of the question's names in full):
    the whole chunk, or its first ``max_strips`` strips (its heading and lead: enough to tell what it is about)."""


PROFILES: dict[str, ModelProfile] = {
    "standard": ModelProfile(
        name="standard",
        relevance="llm",
        grounded="llm",
        useful="llm",
        answer_prompt="generate",
        refinement="off",
        max_strips=2,
        reattribute=False,
        answer_stop=(),
        rephrase=True,
        regenerate=True,
        write_lessons=True,
        extractive_fallback=False,
    ),
    "compact": ModelProfile(
        name="compact",
        relevance="retrieval",
        grounded="cited",
        useful="cited",
        answer_prompt="generate_compact",
        refinement="evidence",
        max_strips=2,
        refine_follow=1,
        refine_unmatched="lead",
        chunk_sources=False,
        reattribute=False,
        answer_stop=("\n",),
        rephrase=False,
        regenerate=False,
        write_lessons=False,
        extractive_fallback=True,
        reader=True,
        confirm=True,
        multihop="evidence",
    ),
    "small": ModelProfile(
        name="small",
        relevance="evidence",
        grounded="evidence",
        useful="evidence",
        answer_prompt="generate_small",
        refinement="evidence",
        max_strips=1,
        reattribute=True,
        answer_stop=("\n",),
        rephrase=False,
        regenerate=False,
        write_lessons=False,
        extractive_fallback=True,
        draft=False,
        reader=True,
        multihop="evidence",
    ),
}


def profile_for(settings: EvidenceSettings) -> ModelProfile:
    """The profile ``settings.profile`` names, with ``settings.extractive_fallback``, ``reader``, ``draft`` and
    ``confirm`` applied when set."""
    profile = PROFILES[settings.profile]
    own = {
        key: chosen
        for key, chosen in (
            ("extractive_fallback", settings.extractive_fallback),
            ("reader", settings.reader),
            ("draft", settings.draft),
            ("confirm", settings.confirm),
        )
        if chosen is not None and chosen != getattr(profile, key)
    }
    return ModelProfile(**{**profile.__dict__, **own}) if own else profile


def evidence_scorer(
    settings: EvidenceSettings,
    embeddings: Embeddings | Callable[[], Embeddings | None] | None = None,
    frequencies: Callable[[], TermFrequencies | None] | None = None,
) -> EvidenceScorer:
    """The evidence scorer the profile asks for: with its ``reader`` on, the one whose answer choice is the answer
    selector's (:class:`~rags_expert.evidence.reader.scorer.ReadingScorer`, reading the knowledge base's term
    ``frequencies`` on first use)."""
    if profile_for(settings).reader:
        return ReadingScorer(settings, embeddings, frequencies=frequencies)
    return EvidenceScorer(settings, embeddings)


@dataclass(frozen=True)
class RefinePlan:
    """The refinement settings in force: the settings' own, else the model profile's."""

    method: RefinementMethod
    window: int
    max_strips: int
    min_score: float
    unmatched: Literal["whole", "lead"] = "whole"
    follow: int = 0

    @classmethod
    def of(cls, settings: RagsExpertSettings) -> RefinePlan:
        """The plan of ``settings`` (``refinement.*``, the profile filling in what is unset)."""
        profile, own = profile_for(settings.evidence), settings.refinement
        return cls(
            method=own.method or profile.refinement,
            window=own.window,
            max_strips=own.max_strips or profile.max_strips,
            min_score=own.min_score,
            unmatched=profile.refine_unmatched,
            follow=profile.refine_follow,
        )
