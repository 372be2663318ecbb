"""The RAG agent's evidence signals and model profile (which checks the LLM makes, which the evidence makes).

See :mod:`rags_expert.rag.profiles` for the profiles and :mod:`rags_expert.evidence` for the signals.
The thresholds were tuned on the dev half of ``bench/single_fact`` (docs/local-model.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rags_expert.settings.base import SettingsSection

ModelProfileName = Literal["standard", "compact", "small"]


class EvidenceSettings(SettingsSection):
    """Model-free evidence: answer attribution, evidence grading for weak models, the extractive fallback."""

    profile: ModelProfileName = Field(
        "standard",
        description="Which checks the chat model makes: 'standard' (a capable model grades relevance, grounding "
        "and usefulness; the evidence adds and verifies citations) or 'small' (a weak model only writes the "
        "answer; relevance, grounding and usefulness come from the evidence). `--local` uses local.profile.",
    )
    attribution: bool = Field(
        True,
        description="Give an answer that cites no chunk the citations of the chunks that support its sentences "
        "(instead of rejecting it); a sentence no chunk supports leaves the answer uncited (rejected).",
    )
    verify_answers: bool = Field(
        True,
        description="Accept an answer without the model's grounding and usefulness calls when the evidence sees "
        "both: every sentence cites a chunk holding all its terms and numbers (evidence.min_support), and the one "
        "sentence of the chunks that best answers the question states everything it adds (rags_expert.rag.verdict.verified). "
        "The evidence only accepts: otherwise the model checks as before. On by default: it saves the checks' round "
        "trip on a quoting answer (the happy path in one round trip, docs/benchmarks.md), and agreed with a judge "
        "knowing the gold answer on 98.9-100 % of answers. Turn it off when every answer must go past the model's "
        "graders (a host whose own grader is stricter than quoting, or tests that script the graders' verdicts).",
    )
    extractive_fallback: bool | None = Field(
        None,
        description="When no generated answer passes, answer with the best matching sentence of the relevant "
        "chunks, quoted and cited (only if it holds an answer of the question's type). None: the profile's "
        "default (small and compact: on, standard: off).",
    )
    reader: bool | None = Field(
        None,
        description="Choose the unit that answers (or none) with the answer selector (rags_expert.evidence.reader: "
        "a conditional logit over every retrieved unit's features, weights fitted on dev data by "
        "bench/train_reader.py) instead of the evidence's hand rules. It decides what the extractive fallback "
        "quotes, what a draft must rest on, and when the run abstains. None: the profile's default (small and "
        "compact: on, standard: off).",
    )
    draft: bool | None = Field(
        None,
        description="Let the chat model write the answer (a speculative draft included), checked by the evidence "
        "(or by the model's graders), before the extractive fallback quotes. Off, a question is answered by the "
        "extractive fallback's quote (the answer selector's choice in the small profile) or not at all, with no "
        "answer call; the small profile then calls the model only to condense a follow-up. None: the profile's "
        "default (small: off, since SmolLM2-135M's accepted drafts restated the unit the selector quotes anyway, "
        "at ~3 s a question; standard: on).",
    )
    confirm: bool | None = Field(
        None,
        description="Before an answer is given, ask the chat model in the answer call's own conversation whether the "
        "excerpts state it: one call for one token, its yes-probability calibrated on dev questions "
        "(rags_expert.rag.verdict.confirmed, bench/fit_confirm.py) into the probability that the answer is right, "
        "which must reach evidence.min_confirm (and is the reply's 'confidence'). Needs an endpoint that returns "
        "log-probabilities (llama.cpp, vLLM, OpenAI); without them the written yes or no decides. None: the "
        "profile's default (compact: on, standard and small: off).",
    )
    min_confirm: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="The calibrated probability of being right an answer needs when evidence.confirm is on; below "
        "it the run ends in the honest failure. None: the threshold fitted with the calibration on dev questions "
        "(rags_expert/rag/verdict/confirm_weights.json, bench/fit_confirm.py: the lowest keeping wrong answers "
        "within 5 % with 90 % of unanswerable questions declined; 0.75 for Qwen2.5-Coder-1.5B on 17 dev corpora, "
        "docs/local-model.md).",
    )
    closest_passages: int = Field(
        3,
        ge=0,
        le=10,
        description="When the extractive fallback finds no answer, the number of closest units of the relevant "
        "chunks the 'not found' reply quotes and cites under 'Not found; closest passages' (--json: 'closest'). "
        "0: none.",
    )
    term_sample: int = Field(
        2000,
        ge=0,
        le=1_000_000,
        description="The answer selector weighs a question term its chunk lacks by how rare the term is in the "
        "knowledge base, counted over this many of its chunks (read once per process; 0: over the retrieved chunks "
        "only, as for a host's own retriever).",
    )
    topic_share: float = Field(
        0.3,
        gt=0.0,
        le=1.0,
        description="The answer selector counts a name of the question that at least this share of the knowledge "
        "base's chunks (evidence.term_sample) hold as what the knowledge base is about, held by every chunk: "
        "'the default backlog of Gunicorn' is answered by the settings page, which never repeats 'Gunicorn'. Each "
        "dev corpus's own library name is held by 38-100 % of its chunks.",
    )
    vector_cache: bool = Field(
        True,
        description="Keep the vectors of the passages the evidence compares with the question (each chunk's units, "
        "heading path and text) in the data folder's vectors.sqlite: computed by ingest, read by each question, "
        "which then embeds only the question instead of some two hundred texts (an offline answer 2-8 s faster "
        "on 2 cores). Answers are the same either way; a Qdrant server (store.url) keeps none.",
    )
    ingest_vectors: bool = Field(
        True,
        description="With evidence.vector_cache: ingest embeds the passages of the chunks it stores (every unit, "
        "heading path and text of a chunk the file lacks), so the first question on them is as fast as the next; "
        "this about doubles ingest's embedding work. Off: ingest leaves them to the questions, each embedding "
        "those of its retrieved chunks that no earlier question did.",
    )
    use_embeddings: bool = Field(
        True,
        description="Blend in the cosine similarity of question and sentence under the knowledge base's embedding "
        "model (when the agent has one; a host's own retriever without embeddings uses lexical evidence only).",
    )
    context_weight: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="Weight of a question term found in the chunk's title or heading but not in the sentence "
        "(the subject that the sentence's 'it' refers to).",
    )
    labels: bool = Field(
        True,
        description="Read what a unit is about from its structure: a list item's leading term, a table row's "
        "header, a code-named section heading count as the unit's context and are quoted with it.",
    )
    similarity_weight: float = Field(0.3, ge=0.0, le=1.0, description="Weight of the embedding similarity in a match.")
    similarity_floor: float = Field(
        0.75, ge=-1.0, le=1.0, description="Cosine similarity that scores 0 (e5: unrelated)."
    )
    similarity_ceiling: float = Field(0.92, ge=-1.0, le=1.0, description="Cosine similarity that scores 1.")
    min_relevance: float = Field(
        0.5, ge=0.0, le=1.0, description="Evidence relevance: a chunk is relevant when its best sentence scores this."
    )
    min_answer_score: float = Field(
        0.55,
        ge=0.0,
        le=1.0,
        description="A sentence answers the question (may be quoted; makes an answer useful) from this match score "
        "(0.6 before the real-documentation set; 0.55 measured on its dev half and the single-fact dev half).",
    )
    paraphrase_similarity: float = Field(
        0.86,
        ge=-1.0,
        le=1.0,
        description="Cosine similarity (the knowledge base's embedding model) from which a unit holding a code "
        "name the question lacks may answer although its chunk lacks one of the question's terms (the question "
        "said it in other words: 'serves' for 'loads'). Tuned on the real-documentation dev half.",
    )
    paraphrase_similarity_two: float = Field(
        0.89,
        ge=-1.0,
        le=1.0,
        description="Likewise, from which two absent terms are allowed.",
    )
    min_support: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="Share of an answer sentence's terms one chunk sentence (or two neighbouring ones, with the "
        "chunk's title) must hold to support it; 1.0: a weak model's answer may add no word of its own.",
    )
    min_cited_support: float = Field(
        0.25,
        ge=0.0,
        le=1.0,
        description="The compact profile's check: for each answer sentence that states something, the share of the "
        "code names and numbers it adds (else of its added terms) that the chunk it cites writes (numbers in prose, "
        "not only in a code example); the least share must reach this or the answer is not a success (the honest "
        "failure, quoting the closest passages). Fitted on dev questions (bench/local_designs.py --fit): 0.25 keeps "
        "the right paraphrased answers written in the model's own words and drops values it made up.",
    )
    span_min_support: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of an answer sentence's terms the span it cites (a segment of the cited chunk, or two "
        "neighbouring ones, with the chunk's title) must hold for response_metadata['citations'] to give the "
        "sentence that span; below it the sentence is reported unsupported (docs/citations.md).",
    )
    measure_bonus: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Rank bonus of a sentence that holds the adjective of a 'how tall / how far' question ('its "
        "tower is 34 metres tall' before 'the keeper tended the lamp for 26 years'); ranking only, no threshold.",
    )

    @model_validator(mode="after")
    def _ordered_similarity(self) -> EvidenceSettings:
        if self.similarity_ceiling <= self.similarity_floor:
            raise ValueError("similarity_ceiling must be above similarity_floor")
        return self


RefinementMethod = Literal["off", "evidence", "llm"]


class RefinementSettings(SettingsSection):
    """Knowledge refinement (CRAG's decompose-recompose, docs/retrieval.md): before the answer, each relevant
    chunk is cut to its relevant strips (``window`` sentences each), so the answer prompt and the groundedness
    check read less; citations and sources still name the whole chunk."""

    method: RefinementMethod | None = Field(
        None,
        description="How strips are chosen: 'evidence' (no model call: each strip scored against the question by "
        "the evidence's term match blended with embedding similarity), 'llm' (one call per relevant chunk lists its "
        "relevant strips), or 'off' (whole chunks). None: the model profile's choice ('evidence' for 'small' and "
        "'compact', 'off' for 'standard').",
    )
    window: int = Field(1, ge=1, le=10, description="Sentences per strip (consecutive, not overlapping).")
    max_strips: int | None = Field(
        None,
        ge=1,
        le=50,
        description="Evidence method: strips kept per chunk at most, best first (kept in the chunk's order). "
        "None: the profile's (1 for 'small', 2 for 'compact' and 'standard').",
    )
    min_score: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Evidence method: a strip after the chunk's best is kept only when its best sentence's match "
        "score reaches this (0: the max_strips best strips, whatever they score; measured best on HotpotQA dev).",
    )
