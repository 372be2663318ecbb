"""The answer selector's model: one logistic regression over a retrieved unit's general features (issue #35).

A candidate is a unit (sentence, list item, table row, code line) of a retrieved chunk. Its features
(:data:`FEATURES`, :func:`feature_vector`) are general ones: today's evidence match and its parts (IDF-weighted and
plain term coverage, the share of question terms its chunk lacks, whether it holds an answer of the question's type),
the e5 similarity of question and unit / heading path / chunk, the chunk's retrieval rank, the unit's kind, and from
the local model the question likelihood ``log P(q | heading + unit)`` per question token (UPR) and the answer PMI
``log P(s | heading, q) - log P(s | heading)`` per unit token (:mod:`rags_expert.evidence.likelihood`). Similarities
and likelihoods also count relative to the question's best candidate, so one threshold fits every question.

The weights are data (``reader_weights.json`` beside this module), written by ``python bench/train_reader.py`` from
dev data only; :class:`ReaderModel` reads them. Nothing here calls a model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

FEATURES: tuple[str, ...] = (
    "evidence",
    "answers",
    "idf_coverage",
    "coverage",
    "missing",
    "type_match",
    "e5_unit",
    "e5_unit_gap",
    "e5_heading",
    "e5_chunk",
    "retrieval",
    "kind_item",
    "kind_row",
    "kind_code",
    "lead_in",
    "pointer",
    "ql",
    "ql_gap",
    "pmi",
    "pmi_gap",
)
"""The model's inputs, in order (:func:`feature_vector`)."""

LIKELIHOOD_FEATURES = frozenset({"ql", "ql_gap", "pmi", "pmi_gap"})
"""The features that need the local model (left out by a model trained ``--no-llm``)."""


def _num(value: Any) -> float:
    return float(value) if value is not None else 0.0


def feature_vectors(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Per candidate of one question, its named features (the raw values ``bench/reader_signals.py`` records:
    ``evidence``, ``e5_unit``, ``ql`` (summed over the question's tokens, ``ql_tokens`` of them), ``pmi`` (per unit
    token), …); the ``*_gap`` ones are the candidate's value minus the question's best (≤ 0)."""
    best_e5 = max((_num(r.get("e5_unit")) for r in rows), default=0.0)
    ql = [_num(r.get("ql")) / max(1, int(r.get("ql_tokens") or 1)) for r in rows]
    pmi = [_num(r.get("pmi")) for r in rows]
    best_ql, best_pmi = max(ql, default=0.0), max(pmi, default=0.0)
    out = []
    for r, q, p in zip(rows, ql, pmi, strict=True):
        kind = str(r.get("kind") or "prose")
        out.append(
            {
                "evidence": _num(r.get("evidence")),
                "answers": float(bool(r.get("answers"))),
                "idf_coverage": _num(r.get("idf_coverage")),
                "coverage": _num(r.get("coverage")),
                "missing": _num(r.get("missing")),
                "type_match": float(bool(r.get("type_match"))),
                "e5_unit": _num(r.get("e5_unit")),
                "e5_unit_gap": _num(r.get("e5_unit")) - best_e5,
                "e5_heading": _num(r.get("e5_heading")),
                "e5_chunk": _num(r.get("e5_chunk")),
                "retrieval": 1.0 / (1.0 + int(r.get("retrieval") or 0)),
                "kind_item": float(kind == "item"),
                "kind_row": float(kind == "row"),
                "kind_code": float(kind == "code"),
                "lead_in": float(bool(r.get("lead_in"))),
                "pointer": float(bool(r.get("pointer"))),
                "ql": q,
                "ql_gap": q - best_ql,
                "pmi": p,
                "pmi_gap": p - best_pmi,
            }
        )
    return out


@dataclass(frozen=True)
class ReaderModel:
    """A fitted logistic regression: standardised features, weights, bias, and the abstain threshold."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    """Below this probability for the best candidate, the run abstains."""
    meta: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReaderModel:
        """The model a ``bench/train_reader.py`` JSON describes."""
        return cls(
            tuple(data["features"]),
            tuple(data["mean"]),
            tuple(data["scale"]),
            tuple(data["weights"]),
            float(data["bias"]),
            float(data["threshold"]),
            dict(data.get("meta") or {}),
        )

    @classmethod
    def shipped(cls) -> ReaderModel:
        """The weights shipped in the package (``reader_weights.json``)."""
        text = resources.files("rags_expert.evidence").joinpath("reader_weights.json").read_text(encoding="utf-8")
        return cls.from_json(json.loads(text))

    def probability(self, named: Mapping[str, float]) -> float:
        """P(this candidate states the answer)."""
        z = self.bias + sum(
            w * (named[f] - m) / s
            for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def rank(self, rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, float]]:
        """``(index, probability)`` of each candidate, most probable first (ties: candidate order)."""
        probs = [self.probability(v) for v in feature_vectors(rows)]
        return sorted(enumerate(probs), key=lambda t: (-t[1], t[0]))
