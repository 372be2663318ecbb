"""The answer selector: one calibrated model chooses the unit that answers a question, or none (issue #35).

A candidate is a unit (sentence, list item, table row, code line) of a retrieved chunk. Its features
(:data:`FEATURES`, :func:`feature_vectors`) are general ones: the evidence match and its parts (IDF-weighted and plain
term coverage, the share of question terms its chunk lacks, whether the evidence's rules say it answers, whether it
holds an answer of the question's type), the e5 similarity of question and unit / heading path / chunk and the unit's neighbours' (relative to the
question's other candidates), the chunk's retrieval rank, the unit's kind, its length, and optionally the local model's question likelihood
``log P(q | heading + unit)`` per question token (UPR, :mod:`rags_expert.evidence.likelihood`). Scores also count
relative to the question's best candidate, so one threshold fits every question.

The selector is a conditional logit over one question's candidates **and a "no answer" option** (its logit is a
learned constant): ``P(unit i answers) = exp(w·x_i) / (exp(b) + Σ_j exp(w·x_j))``. Weak candidates all round leave
the probability with "no answer"; one strong candidate takes it. A small calibrator (a logistic regression on the
chosen quote's log-odds, its lead over the next quote and the evidence's own reading of it, fitted on
leave-one-corpus-out choices) turns that into the probability that the quote answers; the run quotes it when this
reaches the threshold, else it abstains. Weights and threshold are data (``reader_weights.json`` beside
this module), written by ``python bench/train_reader.py`` from dev data only.

:class:`ReadingScorer` is the :class:`~rags_expert.evidence.scorer.EvidenceScorer` whose ``best_answer`` is the
model's choice (``evidence.reader``), quoted with the unit of its heading that states the value a question asks for
when it states none itself (:func:`value_beside`); everything else it scores as the evidence does.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rags_expert.evidence.answer_type import AnswerType, expected_type, holds_answer
from rags_expert.evidence.code import under_other_condition
from rags_expert.evidence.scorer import EvidenceScorer, Match, _chunk_units
from rags_expert.evidence.text import TermFrequencies, question_terms, terms
from rags_expert.settings import EvidenceSettings

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


def _num(value: Any) -> float:
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
    best = {key: max((_num(r.get(key)) for r in rows), default=0.0) for key in ("evidence", "idf_coverage")}
    sims = {key: [r.get(key) for r in rows] for key in ("e5_unit", "e5_heading", "e5_chunk")}
    sims["e5_window"] = _window(rows, "e5_unit")
    z = {key: _standardised(values) for key, values in sims.items()}
    unit_rank = _ranks(sims["e5_unit"])
    ql = [_num(r.get("ql")) / max(1, int(r.get("ql_tokens") or 1)) for r in rows]
    best_ql = max(ql, default=0.0)
    out = []
    for i, (r, q) in enumerate(zip(rows, ql, strict=True)):
        kind = str(r.get("kind") or "prose")
        words = int(r.get("words") or 0)
        out.append(
            {
                "evidence": _num(r.get("evidence")),
                "evidence_gap": _num(r.get("evidence")) - best["evidence"],
                "answers": float(bool(r.get("answers"))),
                "idf_coverage": _num(r.get("idf_coverage")),
                "idf_gap": _num(r.get("idf_coverage")) - best["idf_coverage"],
                "coverage": _num(r.get("coverage")),
                "missing": _num(r.get("missing")),
                "missing_kb": _num(r.get("missing_kb", r.get("missing"))),
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
    :class:`ReadingScorer`'s reads the knowledge base's topic), plain term coverage, the share of the question's
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
        "evidence": _num(row.get("evidence")),
        "type_match": float(bool(row.get("type_match"))),
        "missing": _num(row.get("missing", 1.0)),
        "missing_kb": _num(row.get("missing_kb", row.get("missing", 1.0))),
    }


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
    lacking = _num(row.get("missing_kb", row.get("missing", 1.0)))
    return lacking <= gate and not row.get("conditional")


class ReadingScorer(EvidenceScorer):
    """The evidence scorer whose answer choice is the reader's (:class:`ReaderModel`): every retrieved unit is a
    candidate, the model quotes the most probable one or none. Relevance and support stay the evidence's."""

    def __init__(
        self,
        settings: EvidenceSettings,
        embeddings: Embeddings | Callable[[], Embeddings | None] | None = None,
        model: ReaderModel | None = None,
        frequencies: Callable[[], TermFrequencies | None] | None = None,
    ) -> None:
        """``model``: the fitted reader (default: the shipped weights); ``frequencies``: the knowledge base's term
        frequencies, read on first use (None: the retrieved chunks' own)."""
        super().__init__(settings, embeddings)
        self.model = model or ReaderModel.shipped()
        self._read = frequencies
        self._known: TermFrequencies | None = None
        if self.model.needs_likelihood:
            raise ValueError("this reader needs the local model's likelihoods, which the agent does not compute")

    def _read_frequencies(self) -> TermFrequencies | None:
        with self._lock:
            if self._read is not None:
                self._known, self._read = self._read(), None
            return self._known

    async def frequencies(self) -> TermFrequencies | None:
        """The knowledge base's term frequencies (read once, on first use, off the event loop), or None without a
        knowledge base."""
        if self._read is None:
            return self._known
        return await asyncio.to_thread(self._read_frequencies)

    async def matches(
        self, question: str, docs: Sequence[Document], topic: frozenset[str] = frozenset()
    ) -> list[Match]:
        """The evidence's matches, the question's names that the knowledge base is about held by every chunk
        (``evidence.topic_share``): relevance and support read the settings page that never repeats the library's
        name as the answer choice does."""
        frequencies = await self.frequencies()
        if frequencies is not None:
            topic = topic | frequencies.topic(question, self.settings.topic_share)
        return await super().matches(question, docs, topic)

    async def best_answer(self, question: str, docs: Sequence[Document]) -> Match | None:
        """The candidate the reader chooses, as a match (its score is the reader's probability), or None."""
        found = await candidates(self, question, docs, await self.frequencies())
        rows = [c.row for c in found]
        chosen = self.model.choose(rows)
        if chosen is None:
            return None
        match = _as_match(found[chosen[0]], chosen[1])
        beside = value_beside(found, chosen[0], lambda: self.model.probabilities(rows), question)
        return match if beside is None else replace(match, sentence=together(found, chosen[0], beside))

    async def closest(self, question: str, docs: Sequence[Document], k: int = 3) -> list[Match]:
        """The ``k`` most probable quotes by the reader (factual units, each text once), for a "not found" reply."""
        found = await candidates(self, question, docs, await self.frequencies())
        probs = self.model.probabilities([c.row for c in found])
        order = sorted(range(len(found)), key=lambda i: (-probs[i], i))
        out: list[Match] = []
        for i in order:
            c = found[i]
            if len(out) == k:
                break
            if c.row["factual"] and all(c.text != o.sentence for o in out):
                out.append(_as_match(c, probs[i]))
        return out


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


def _as_match(c: Candidate, probability: float) -> Match:
    """A candidate as the evidence's match, its score the reader's probability."""
    coverage, missing = (c.match.coverage, c.match.missing) if c.match else (0.0, 1.0)
    return Match(c.doc, c.text, coverage, c.row.get("e5_unit"), missing, True, probability, bool(c.row["factual"]))
