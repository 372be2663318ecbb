"""Whether the model confirms the answer the run would give: a calibrated probability that it is right.

The ``compact`` profile's last check (``evidence.confirm``). A ~1.5B model writes a fluent sentence from the right
excerpt and still gets its value wrong ("blackd listens on 9090"), and the answer selector's quote after a decline is
sometimes a neighbour of the answer; the cited-text check (:mod:`~rags_expert.rag.verdict.cited`) cannot tell either
from a right one. The model can, better than chance, when shown the answer as a *proposed* one after the answer
call's own chunks and question (:func:`~rags_expert.rag.answer.prompt.confirm_messages`; asked in its own
conversation, it confirmed almost everything it wrote): the probability of "yes" among its first token's
alternatives (:func:`~rags_expert.llm.grading.yes_probability`) costs one call whose prompt starts as the answer
call's (the server's prompt cache reads only the proposed answer and the question, ~50 tokens). A logistic
calibration per answer kind, fitted on dev questions (``bench/fit_confirm.py`` → ``confirm_weights.json``), maps it
to the probability that the answer is right; below ``evidence.min_confirm`` (unset: the threshold fitted with the
weights) the run ends in the honest failure instead.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

WEIGHTS_FILE = "confirm_weights.json"
FEATURES = ("bias", "yes_logit")
"""What the calibration reads: a constant and the logit of the model's yes-probability."""
UNCONFIRMED = "the model does not confirm that the excerpts state it"
"""The feedback (and event) of an answer the calibrated confirmation rejects."""
EPSILON = 1e-4
"""Probabilities are clipped to [ε, 1-ε] before their logit (a token the server rounds to certainty)."""


def logit(probability: float) -> float:
    """log(p / (1 - p)), with ``p`` clipped to [ε, 1-ε]."""
    p = min(max(probability, EPSILON), 1 - EPSILON)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Calibration:
    """Logistic weights per answer kind (``generated``: the model's own, ``extractive``: the answer selector's
    quote) over :data:`FEATURES`."""

    weights: dict[str, dict[str, float]]
    min_confirm: float = 0.5
    """The threshold chosen with these weights on the same dev run (``evidence.min_confirm`` unless it is set)."""
    fitted_on: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        """The calibration of ``bench/fit_confirm.py``'s output."""
        weights = {kind: dict(w) for kind, w in data["weights"].items()}
        return cls(weights, float(data.get("min_confirm", 0.5)), str(data.get("fitted_on", "")))

    def probability(self, kind: str, yes: float) -> float:
        """The calibrated probability that an answer of ``kind`` is right, given the model's yes-probability
        (an unknown kind reads the ``generated`` weights)."""
        w = self.weights.get(kind) or self.weights["generated"]
        score = w.get("bias", 0.0) + w.get("yes_logit", 1.0) * logit(yes)
        return 1.0 / (1.0 + math.exp(-max(min(score, 50.0), -50.0)))


@cache
def shipped_calibration() -> Calibration:
    """The calibration shipped with the package (``rags_expert/rag/verdict/confirm_weights.json``)."""
    text = resources.files(__package__).joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return Calibration.from_json(json.loads(text))


@dataclass(frozen=True)
class Confirmation:
    """The model's yes-probability, the calibrated probability that the answer is right, and the decision."""

    yes: float
    confidence: float
    confirmed: bool


def confirmation(
    kind: str, yes: float, min_confirm: float | None = None, calibration: Calibration | None = None
) -> Confirmation:
    """Confirm an answer of ``kind`` whose calibrated probability of being right reaches ``min_confirm`` (None: the
    threshold fitted with the calibration)."""
    calibration = calibration or shipped_calibration()
    confidence = calibration.probability(kind, yes)
    threshold = calibration.min_confirm if min_confirm is None else min_confirm
    return Confirmation(yes, confidence, confidence >= threshold)
