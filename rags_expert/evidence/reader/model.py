"""The answer selector's fitted model: a conditional logit over candidates and "no answer", a calibrator, a gate.

Weights and threshold are data (``reader_weights.json`` in the ``rags_expert.evidence`` package), written by
``python bench/train_reader.py`` from dev data only: a small calibrator (a logistic regression on the chosen quote's
log-odds, its lead over the next quote and the evidence's own reading of it, fitted on leave-one-corpus-out choices)
turns the selector's choice into the probability that the quote answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rags_expert.evidence.reader.features import LIKELIHOOD_FEATURES, calibration_features, feature_vectors, number


@dataclass(frozen=True)
class Logistic:
    """A fitted logistic regression on named, standardised features."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Logistic:
        """The regression a ``bench/train_reader.py`` JSON describes."""
        return cls(
            tuple(data["features"]),
            tuple(data["mean"]),
            tuple(data["scale"]),
            tuple(data["weights"]),
            float(data["bias"]),
        )

    def linear(self, named: Mapping[str, float]) -> float:
        """``w·x`` of the standardised features (without the bias)."""
        return sum(
            w * (named[f] - m) / s
            for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )

    def probability(self, named: Mapping[str, float]) -> float:
        """The logistic of ``w·x + b``."""
        z = self.linear(named) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True)
class ReaderModel:
    """The answer selector: a conditional logit over one question's candidates and "no answer" (``selector``: its
    bias is the "no answer" logit), and a calibrator of its choice (``calibrator``) with the threshold below which
    the run abstains."""

    selector: Logistic
    calibrator: Logistic
    threshold: float
    """Below this calibrated probability that the chosen quote answers, the run abstains."""
    meta: Mapping[str, Any]
    gate: float = 0.0
    """The most a quoted unit's chunk may lack of the question (``missing_kb``) unless the rules say it answers
    (:func:`admissible`); chosen on the dev folds."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReaderModel:
        """The model a ``bench/train_reader.py`` JSON describes."""
        return cls(
            Logistic.from_json(data["selector"]),
            Logistic.from_json(data["calibrator"]),
            float(data["threshold"]),
            dict(data.get("meta") or {}),
            float(data.get("gate", 0.0)),
        )

    @classmethod
    def shipped(cls) -> ReaderModel:
        """The weights shipped in the package (``reader_weights.json``)."""
        text = resources.files("rags_expert.evidence").joinpath("reader_weights.json").read_text(encoding="utf-8")
        return cls.from_json(json.loads(text))

    @property
    def needs_likelihood(self) -> bool:
        """Whether the model reads the local model's question likelihood."""
        return bool(LIKELIHOOD_FEATURES & set(self.selector.features))

    def probabilities(self, rows: Sequence[Mapping[str, Any]]) -> list[float]:
        """P(candidate i answers the question), per candidate; what is left is P(no candidate does)."""
        logits = [self.selector.linear(v) for v in feature_vectors(rows)]
        no_answer = self.selector.bias
        top = max([no_answer, *logits])
        exps = [math.exp(z - top) for z in logits]
        total = math.exp(no_answer - top) + sum(exps)
        return [e / total for e in exps]

    def quote(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, float, float] | None:
        """``(index, probability, runner-up's probability)`` of the most probable quote, or None without candidates.
        A unit that overlapping chunks both hold is one quote: its candidates' probabilities add up (``same_as``: the
        index of the first candidate with the same text), and the first of them stands for it."""
        total: dict[int, float] = {}
        for i, (row, prob) in enumerate(zip(rows, self.probabilities(rows), strict=True)):
            first = int(row.get("same_as", i))
            total[first] = total.get(first, 0.0) + prob
        if not total:
            return None
        order = sorted(total, key=lambda i: (-total[i], i))
        return order[0], total[order[0]], (total[order[1]] if len(order) > 1 else 0.0)

    def read(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, float] | None:
        """``(index, calibrated probability that it answers)`` of the most probable quote, or None."""
        found = self.quote(rows)
        if found is None:
            return None
        best, p, runner_up = found
        return best, self.calibrator.probability(calibration_features(p, runner_up, rows[best]))

    def choose(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, float] | None:
        """The most probable quote and its calibrated probability when that reaches the threshold and the quote may
        answer at all (:func:`admissible`), else None (the run says "not found")."""
        found = self.read(rows)
        if found is None or found[1] < self.threshold or not admissible(rows[found[0]], self.gate):
            return None
        return found


def admissible(row: Mapping[str, Any], gate: float = 0.0) -> bool:
    """Whether a unit may be quoted as the answer: its chunk lacks at most ``gate`` of the question's terms,
    weighted by how rare each is in the knowledge base (``missing_kb``; a chunk that never says "weigh" cannot say
    how much the engine weighed, but one that only lacks "set" or the library's name may answer), and it states no
    fact under a condition naming code the question lacks ("If used with `--quiet`, … exit code 1" for a question
    about `--check`: true only under that condition), unless the evidence's rules say it answers (they allow a
    missing term for a paraphrase with a new code name, or a named answer category). Measured on the dev half:
    without the first, 2 of the single-fact set's 10 unanswerable questions were answered with a near miss. A code
    line is never the answer (a console line "$ app run --debug" was quoted for what the debugger is protected by):
    the question is not found, its closest passages quoted."""
    if row.get("kind") == "code":
        return False
    if row.get("answers"):
        return True
    lacking = number(row.get("missing_kb", row.get("missing", 1.0)))
    return lacking <= gate and not row.get("conditional")
