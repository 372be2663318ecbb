"""The quote around the answer selector's choice: the unit beside it that states the value a question asks for.

Documentation often says what an option does and its default in two units; :func:`value_beside` finds the second
when the chosen unit states no value, :func:`together` joins them into one quote, :func:`as_match` gives a candidate
as the evidence's match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rags_expert.evidence.answer_type import AnswerType, expected_type, holds_answer
from rags_expert.evidence.reader.features import Candidate
from rags_expert.evidence.scorer import Match
from rags_expert.evidence.text import terms

_FIELD = re.compile(r"(?P<label>[^\W\d_][\w .-]{0,30}?):\s+\S")
"""A field line: a short label, a colon, its value ("Default: `30`", "Type: int")."""


VALUE_TYPES = frozenset({AnswerType.VALUE, AnswerType.NUMBER, AnswerType.DATE})
"""Answer types that a unit's label never holds: the label names what the unit is about (an option's name), the
value asked for is stated about it."""


def _label_terms(text: str) -> frozenset[str]:
    """The terms of a field line's label (none for any other unit)."""
    return frozenset(terms(m["label"])) if (m := _FIELD.match(text)) else frozenset()


def value_beside(
    found: Sequence[Candidate], chosen: int, probabilities: Callable[[], Sequence[float]], question: str
) -> int | None:
    """The unit that states the value the question asks for beside the chosen one, when the chosen one states none:
    documentation often says what an option does and its default in two units ("Workers silent for more than this
    many seconds are killed and restarted." and "Default: `30`"), and a question that names the option by what it
    does ("how long can a worker stay silent …, by default?") finds the first.

    Only a unit of the same chunk and under the same heading, a fact of its own holding a value (no code, lead-in,
    pointer or condition): a field line whose label the question names ("Default: `30`" for "… by default?")
    wherever it stands under that heading, the nearest first; else the unit right before or after the chosen one,
    the more probable by the reader when both are. None when the chosen unit holds a value itself or the question
    asks for none (:data:`VALUE_TYPES`)."""
    c, kind = found[chosen], expected_type(question)
    if kind not in VALUE_TYPES or holds_answer(c.own or c.text, question, kind):
        return None
    asked = terms(question)
    same = [
        j
        for j, o in enumerate(found)
        if j != chosen
        and o.doc == c.doc
        and o.row["block"] == c.row["block"]
        and o.row["factual"]
        and o.row["kind"] != "code"
        and not (o.row["lead_in"] or o.row["pointer"] or o.row["conditional"])
        and holds_answer(o.own or o.text, question, kind)
    ]
    named = [j for j in same if (label := _label_terms(found[j].own or found[j].text)) and label <= asked]
    if named:
        return min(named, key=lambda j: abs(j - chosen))
    beside = [j for j in same if abs(j - chosen) == 1]
    if len(beside) < 2:
        return beside[0] if beside else None
    probs = probabilities()  # the reader's, only when both neighbours hold a value
    return max(beside, key=lambda j: probs[j])


def together(found: Sequence[Candidate], chosen: int, beside: int) -> str:
    """The chosen unit and the one beside it as one quote, in the document's order: the first as quoted (with its
    label), then the second's own text (the label is theirs both), a full stop between them when the first has
    none."""
    first, second = sorted((chosen, beside))
    head = found[first].text.rstrip()
    return f"{head}{'' if head.endswith(('.', '!', '?')) else '.'} {found[second].own or found[second].text}"


def as_match(c: Candidate, probability: float) -> Match:
    """A candidate as the evidence's match, its score the reader's probability."""
    coverage, missing = (c.match.coverage, c.match.missing) if c.match else (0.0, 1.0)
    return Match(c.doc, c.text, coverage, c.row.get("e5_unit"), missing, True, probability, bool(c.row["factual"]))
