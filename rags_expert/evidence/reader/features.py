"""The answer selector's candidates and their features (issue #35).

A candidate is a unit (sentence, list item, table row, code line) of a retrieved chunk. Its features
(:data:`FEATURES`, :func:`feature_vectors`) are general ones: the evidence match and its parts (IDF-weighted and plain
term coverage, the share of question terms its chunk lacks, whether the evidence's rules say it answers, whether it
holds an answer of the question's type), the e5 similarity of question and unit / heading path / chunk and the unit's
neighbours' (relative to the question's other candidates), the chunk's retrieval rank, the unit's kind, its length,
and optionally the local model's question likelihood ``log P(q | heading + unit)`` per question token (UPR,
``bench/likelihood.py``, research only). Scores also count relative to the question's best candidate, so one
threshold fits every question. :func:`calibration_features` are what the calibrator reads of the chosen quote.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from rags_expert.evidence.answer_type import expected_type, holds_answer
from rags_expert.evidence.code import under_other_condition
from rags_expert.evidence.scorer import Match, _chunk_units
from rags_expert.evidence.text import TermFrequencies, question_terms, terms

if TYPE_CHECKING:
    from rags_expert.evidence.scorer import EvidenceScorer

FEATURES: tuple[str, ...] = (
    "evidence",
    "evidence_gap",
    "answers",
    "idf_coverage",
    "idf_gap",
    "coverage",
    "missing",
    "missing_kb",
    "type_match",
    "e5_unit_z",
    "e5_unit_rank",
    "e5_heading_z",
    "e5_chunk_z",
    "e5_window_z",
    "retrieval",
    "kind_item",
    "kind_row",
    "kind_code",
    "lead_in",
    "pointer",
    "factual",
    "short",
    "long",
    "ql",
    "ql_gap",
)
"""The model's inputs, in order (:func:`feature_vectors`)."""

LIKELIHOOD_FEATURES = frozenset({"ql", "ql_gap"})
"""The features that need the local model (left out by a model trained ``--no-llm``)."""


def number(value: Any) -> float:
    """``value`` as a float, 0 for None."""
    return float(value) if value is not None else 0.0


def _standardised(values: Sequence[float | None]) -> list[float]:
    """Each value's z-score among one question's candidates (0 for all when there is no spread or no value): an
    embedding model's similarities are read relative to each other, never by their scale, so the weights carry to
    a knowledge base embedded by another model."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return [0.0] * len(values)
    mean = sum(known) / len(known)
    spread = math.sqrt(sum((v - mean) ** 2 for v in known) / len(known))
    return [0.0 if v is None or spread < 1e-9 else (v - mean) / spread for v in values]


def _ranks(values: Sequence[float | None]) -> list[float]:
    """``1 / (1 + rank)`` of each value among one question's candidates, highest first (0 without a value)."""
    order = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -(values[i] or 0.0))
    out = [0.0] * len(values)
    for rank, i in enumerate(order):
        out[i] = 1.0 / (1.0 + rank)
    return out


def _window(rows: Sequence[Mapping[str, Any]], key: str) -> list[float | None]:
    """Per candidate, the highest ``key`` of its neighbours in its chunk (the units right before and after it;
    candidates are listed in their chunks' order), its own when it has none: a unit that follows or precedes the
    one the question describes (an option's ``Default: 30`` line after the sentence saying what it does) is read
    with that one."""
    out: list[float | None] = []
    for i, row in enumerate(rows):
        near = [
            float(rows[j][key])
            for j in (i - 1, i + 1)
            if 0 <= j < len(rows) and rows[j].get("doc") == row.get("doc") and rows[j].get(key) is not None
        ]
        out.append(max(near) if near else row.get(key))
    return out


def feature_vectors(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Per candidate of one question, its named features from the raw values :func:`candidates` records
    (``evidence``, ``e5_unit``, ``words``, ``ql`` summed over ``ql_tokens`` question tokens, …). ``*_gap`` is the
    candidate's value minus the question's best (≤ 0); similarities count only relative to the question's other
    candidates (``*_z``: z-score, ``e5_unit_rank``: 1/(1+rank)), never by the embedding model's scale;
    ``e5_window_z`` is its neighbours' unit similarity (:func:`_window`)."""
    best = {key: max((number(r.get(key)) for r in rows), default=0.0) for key in ("evidence", "idf_coverage")}
    sims = {key: [r.get(key) for r in rows] for key in ("e5_unit", "e5_heading", "e5_chunk")}
    sims["e5_window"] = _window(rows, "e5_unit")
    z = {key: _standardised(values) for key, values in sims.items()}
    unit_rank = _ranks(sims["e5_unit"])
    ql = [number(r.get("ql")) / max(1, int(r.get("ql_tokens") or 1)) for r in rows]
    best_ql = max(ql, default=0.0)
    out = []
    for i, (r, q) in enumerate(zip(rows, ql, strict=True)):
        kind = str(r.get("kind") or "prose")
        words = int(r.get("words") or 0)
        out.append(
            {
                "evidence": number(r.get("evidence")),
                "evidence_gap": number(r.get("evidence")) - best["evidence"],
                "answers": float(bool(r.get("answers"))),
                "idf_coverage": number(r.get("idf_coverage")),
                "idf_gap": number(r.get("idf_coverage")) - best["idf_coverage"],
                "coverage": number(r.get("coverage")),
                "missing": number(r.get("missing")),
                "missing_kb": number(r.get("missing_kb", r.get("missing"))),
                "type_match": float(bool(r.get("type_match"))),
                "e5_unit_z": z["e5_unit"][i],
                "e5_unit_rank": unit_rank[i],
                "e5_heading_z": z["e5_heading"][i],
                "e5_chunk_z": z["e5_chunk"][i],
                "e5_window_z": z["e5_window"][i],
                "retrieval": 1.0 / (1.0 + int(r.get("retrieval") or 0)),
                "kind_item": float(kind == "item"),
                "kind_row": float(kind == "row"),
                "kind_code": float(kind == "code"),
                "lead_in": float(bool(r.get("lead_in"))),
                "pointer": float(bool(r.get("pointer"))),
                "factual": float(bool(r.get("factual", True))),
                "short": float(0 < words < 6),
                "long": float(words > 45),
                "ql": q,
                "ql_gap": q - best_ql,
            }
        )
    return out


def heading_of(doc: Document) -> str:
    """The chunk's title and section path, as the reader is shown them."""
    meta = doc.metadata or {}
    return " > ".join(str(meta[k]) for k in ("title", "section") if meta.get(k))


@dataclass(frozen=True)
class Candidate:
    """One unit of a retrieved chunk with its raw features (``row``, what :func:`feature_vectors` reads) and the
    evidence's match for it (None when the evidence left its chunk out: none of the question's names in full)."""

    doc: int
    text: str
    row: dict[str, Any]
    match: Match | None
    own: str = ""
    """The unit's own text, without the label its quote (``text``) may start with."""


def missing_weights(question: str, docs: Sequence[Document], frequencies: TermFrequencies | None) -> list[float]:
    """Per chunk, the share of the question's terms it lacks (its heading path counted), each term weighted by its
    inverse document frequency in ``frequencies`` (the knowledge base's; the retrieved chunks' without one). A
    chunk that lacks only words every page uses ("set", "make", the library's own name) lacks little; one that
    lacks the term no chunk holds lacks most."""
    wanted = question_terms(question)
    helds = [terms(heading_of(doc) + " " + doc.page_content) for doc in docs]
    if frequencies is None:
        frequencies = TermFrequencies(len(helds), Counter(t for held in helds for t in held))
    weight = {t: frequencies.idf(t) for t in wanted}
    total = math.fsum(weight.values()) or 1.0  # fsum: the same whatever order the set gave (the hash seed)
    return [math.fsum(w for t, w in weight.items() if t not in held) / total for held in helds]


async def candidates(
    scorer: EvidenceScorer, question: str, docs: Sequence[Document], frequencies: TermFrequencies | None = None
) -> list[Candidate]:
    """Every unit of ``docs`` but headings, with its model-free features: the evidence's match and its parts (a
    :class:`~rags_expert.evidence.reader.scorer.ReadingScorer`'s reads the knowledge base's topic), plain term coverage, the share of the question's
    terms its chunk lacks weighted by ``frequencies`` (:func:`missing_weights`), the answer-type match, the e5
    similarity of question and unit / heading path / chunk (one batch of embeddings, cached by the scorer), the
    chunk's retrieval rank, the unit's kind and length, and which block of its chunk it is in (``block``: the
    headings before it in the chunk)."""
    matches = await scorer.matches(question, docs)
    by_unit = {(m.doc, m.sentence): (rank, m) for rank, m in enumerate(matches)}
    wanted = question_terms(question)
    kind = expected_type(question)
    lacking = missing_weights(question, docs, frequencies)
    out: list[Candidate] = []
    for i, doc in enumerate(docs):
        heading = heading_of(doc)
        block = 0
        for unit in _chunk_units(doc, scorer.settings.labels):
            if unit.kind == "heading":
                block += 1
                continue
            rank, match = by_unit.get((i, unit.quote), (len(matches), None))
            row = {
                "doc": i,
                "heading": heading,
                "kind": unit.kind,
                "lead_in": unit.lead_in,
                "pointer": unit.pointer,
                "factual": unit.factual,
                "words": len(unit.quote.split()),
                "evidence_rank": rank,
                "evidence": match.score if match else 0.0,
                "answers": bool(match and match.answers),
                "idf_coverage": match.coverage if match else 0.0,
                "missing": match.missing if match else 1.0,
                "missing_kb": lacking[i],
                "coverage": len(terms(unit.quote) & wanted) / max(1, len(wanted)),
                "type_match": holds_answer(unit.quote, question, kind),
                "conditional": under_other_condition(unit.text, question),
                "retrieval": i,
                "block": block,
            }
            out.append(Candidate(i, unit.quote, row, match, unit.text))
    first: dict[str, int] = {}
    for i, c in enumerate(out):
        c.row["same_as"] = first.setdefault(c.text, i)
    if out:
        heads = list(dict.fromkeys(c.row["heading"] for c in out))
        texts = [c.text for c in out] + heads + [doc.page_content for doc in docs]
        sims = await scorer._similarities(question, texts)  # noqa: SLF001 - the scorer's own embedding cache
        head_sim = dict(zip(heads, sims[len(out) : len(out) + len(heads)], strict=True))
        for c, sim in zip(out, sims, strict=False):
            c.row["e5_unit"] = sim
            c.row["e5_heading"] = head_sim[c.row["heading"]]
            c.row["e5_chunk"] = sims[len(out) + len(heads) + c.doc]
    return out


CALIBRATION_FEATURES: tuple[str, ...] = (
    "log_odds",
    "margin",
    "answers",
    "evidence",
    "type_match",
    "missing",
    "missing_kb",
)
"""What the calibrator reads of a question's most probable quote (:func:`calibration_features`)."""


def calibration_features(probability: float, runner_up: float, row: Mapping[str, Any]) -> dict[str, float]:
    """The calibrator's inputs for the most probable quote: the selector's log-odds for it, its lead over the next
    quote, and the evidence's own reading of that unit (its rules' "answers", its match score, the answer type, the
    share of the question's terms its chunk lacks, plain and weighted by the knowledge base's term frequencies)."""
    p = min(max(probability, 1e-6), 1 - 1e-6)
    return {
        "log_odds": math.log(p / (1 - p)),
        "margin": probability - runner_up,
        "answers": float(bool(row.get("answers"))),
        "evidence": number(row.get("evidence")),
        "type_match": float(bool(row.get("type_match"))),
        "missing": number(row.get("missing", 1.0)),
        "missing_kb": number(row.get("missing_kb", row.get("missing", 1.0))),
    }
