"""Evidence signals that need no capable model: how well a chunk's sentences match a question, and
which chunk supports each sentence of an answer.

* **match** (question → sentence): the share of the question's content terms the sentence holds (terms of
  its chunk's title or heading, the subject a sentence's "it" refers to, count ``context_weight``), each
  term weighted by its rarity among the sentences scored, blended with the cosine
  similarity of question and sentence under the knowledge base's own embedding model when one is given,
  and whether the sentence holds an answer of the expected type (:mod:`.answer_type`).
* **support** (answer sentence → chunk): the share of the answer sentence's content terms found in one
  sentence of the chunk or two neighbouring ones (the chunk's title counts too). Numbers must match exactly.

:class:`EvidenceScorer` is shared by all runs of an agent; its only state is a bounded cache of
sentence embeddings (the embedding model is called in a worker thread).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rags_expert.evidence.answer_type import (
    AnswerType,
    answer_category,
    expected_type,
    holds_answer,
    mentions_category,
    names_category,
)
from rags_expert.evidence.code import code_names, new_code, under_other_condition
from rags_expert.evidence.text import (
    measure_hint,
    name_phrases,
    question_terms,
    stem,
    strip_citations,
    terms,
)
from rags_expert.evidence.units import Unit, units
from rags_expert.retrieval.embeddings import embedding_input, query_vector
from rags_expert.settings import EvidenceSettings

_CACHE_SIZE = 4096
_MAX_LABEL = 60


@dataclass(frozen=True)
class Match:
    """One sentence of a chunk, scored against the question."""

    doc: int
    """Index of the chunk in the list that was scored."""
    sentence: str
    coverage: float
    similarity: float | None
    missing: float
    """Weighted share of the question's terms found neither in the sentence nor anywhere in its chunk."""
    answers: bool
    """Whether the sentence can answer: it holds something of the question's answer type the question does
    not, and its chunk holds every term of the question (a chunk that never says "painted" cannot say who
    painted the lighthouse), or all but one when the sentence names the answer's category ("On which rock
    does the lighthouse *stand*?" → "built on *Gull Rock*"); never a fact stated under a condition naming code the
    question lacks ("If used with `--quiet`, …" for a question about `--check`)."""
    score: float
    factual: bool = True
    """Whether the unit may be quoted as a fact (:attr:`~rags_expert.evidence.units.Unit.factual`): not a code line,
    not a lead-in ending in a colon."""


@dataclass(frozen=True)
class Support:
    """The best support one answer sentence finds among the chunks."""

    claim: str
    doc: int | None
    """Index of the supporting chunk; None when no chunk supports the claim well enough."""
    score: float


@dataclass(frozen=True)
class _Row:
    """A unit being scored: its chunk, the question terms it holds, those its context holds, and those its
    whole chunk lacks."""

    doc: int
    unit: Unit
    own: set[str]
    context: set[str]
    absent: set[str]
    hinted: bool
    name_absent: bool = False
    """Whether a name of the question (``Celery``, ``2019``) is absent from the unit's page: a name is not
    said in other words, so no allowance covers it."""


def _heading(chunk_units: list[Unit]) -> str:
    """The chunk's first unit when it is a heading, else ""."""
    return chunk_units[0].text if chunk_units and chunk_units[0].kind == "heading" else ""


def _chunk_units(doc: Document, labels: bool = True) -> list[Unit]:
    """The chunk's units; when its section is named by a code name (an API reference's ``### `BLACK_NUM_WORKERS```,
    a Sphinx description's ``NO_COLOR``), that name is the label of its unlabelled sentences and list items: what
    they say is said of it ("When set, `sphinx-build` will not use color" is what setting ``NO_COLOR`` does).
    Without ``labels`` (``evidence.labels``), no unit has one."""
    chunk_units = units(doc.page_content)
    if not labels:
        return [replace(u, label="") for u in chunk_units]
    section = str((doc.metadata or {}).get("section") or _heading(chunk_units))
    name = section.rsplit(" > ", 1)[-1].strip()
    if not name or len(name) > _MAX_LABEL or not code_names(name):
        return chunk_units
    return [u if u.label or u.kind not in ("prose", "item") else replace(u, label=name) for u in chunk_units]


def _chunk_header(doc: Document) -> str:
    meta = doc.metadata or {}
    return " ".join(str(meta.get(k) or "") for k in ("title", "section", "heading"))


_VALUE_NOUNS = frozenset(stem(w) for w in ("value", "version", "release"))


_CODE_KIND_NOUNS = frozenset(
    stem(w) for w in ("option", "argument", "parameter", "setting", "flag", "keyword", "field", "attribute", "key")
)


@lru_cache(maxsize=1024)
def _type_nouns(kind: AnswerType, category: str | None, question: str = "") -> frozenset[str]:
    """Question terms that name the kind of answer, not its subject: "which *argument*", "the default *value*",
    "in which *release*". A parameter list, a table of defaults or "added in 20.1.0" says none of them. Nor need a
    page say what kind of name a code name of the question is: "the `tab_length` *option*" is documented as "the
    `tab_length` keyword"."""
    nouns = {category} if kind is AnswerType.CODE and category else set()
    if kind is AnswerType.VALUE:
        nouns |= _VALUE_NOUNS
    names = code_names(question)
    if names:
        prose = " ".join(w for w in question.replace("`", " ").split() if not code_names(w) & names)
        nouns |= _CODE_KIND_NOUNS & terms(prose)  # "the `tab_length` option", not the "field" of `attrs.field`
    return frozenset(nouns)  # cached: _answers asks it for every unit of the question


def _says_category(unit: Unit, category: str | None) -> bool:
    """Whether a unit names the kind of thing a "which <category>" question asks for (in its text or label);
    True when the question names no category."""
    return category is None or mentions_category(unit.text + " " + unit.label, category)


def _quotable(unit: Unit, kind: AnswerType, category: str | None) -> bool:
    """Whether a unit may be quoted as the answer: a fact, or, for a "which <category>" code question, a lead-in
    that names the category ("With the `EventRenamer` processor, you can …:")."""
    if unit.factual:
        return True
    return kind is AnswerType.CODE and category is not None and unit.names_things and _says_category(unit, category)


def _source(doc: Document, index: int) -> str:
    meta = doc.metadata or {}
    return str(meta.get("doc_id") or meta.get("source") or f"#{index}")


def _required_names(question: str, wanted: set[str], docs: Sequence[Document], helds: list[set[str]]) -> list[set[str]]:
    """The question's names (:func:`~rags_expert.evidence.text.name_phrases`) that pick a chunk: those held by
    the chunks of at most one source. A name that chunks of several documents hold is what the whole knowledge
    base is about ("the thread pool size *in Starlette*", asked of Starlette's documentation), and a chunk that
    does not repeat it is not about something else."""
    names = [p & wanted for p in name_phrases(question) if p & wanted]
    required = []
    for name in names:
        sources = {_source(doc, i) for i, (doc, held) in enumerate(zip(docs, helds, strict=True)) if name <= held}
        if len(sources) < 2:
            required.append(name)
    return required


def _held_by_source(docs: Sequence[Document], helds: list[set[str]]) -> list[set[str]]:
    """Per chunk, the question terms that some chunk of its document holds: a name another chunk of the page
    says is what the page is about ("Starlette uses a thread pool …" above "The default thread pool size is
    only 40 tokens.")."""
    by_source: dict[str, set[str]] = {}
    for i, (doc, held) in enumerate(zip(docs, helds, strict=True)):
        by_source.setdefault(_source(doc, i), set()).update(held)
    return [by_source[_source(doc, i)] for i, doc in enumerate(docs)]


def _local_idf(wanted: set[str], sentence_terms: list[set[str]]) -> dict[str, float]:
    """``log(1 + N / df)`` of each question term over the ``N`` sentences scored; a term no sentence holds
    counts as the rarest (df 1), so that missing it weighs most."""
    n = max(1, len(sentence_terms))
    return {t: math.log(1 + n / max(1, sum(t in held for held in sentence_terms))) for t in wanted}


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class EvidenceScorer:
    """Scores questions against sentences and answers against chunks (see the module docstring)."""

    def __init__(
        self, settings: EvidenceSettings, embeddings: Embeddings | Callable[[], Embeddings | None] | None = None
    ) -> None:
        """``embeddings``: the knowledge base's embedding model, or a function returning it on first use."""
        self.settings = settings
        self._embeddings = embeddings if settings.use_embeddings else None
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    # --- embeddings -----------------------------------------------------------------------------

    @property
    def embeddings(self) -> Embeddings | None:
        """The embedding model (resolved on first use when a function was given), or None."""
        if callable(self._embeddings) and not isinstance(self._embeddings, Embeddings):
            self._embeddings = self._embeddings()
        return self._embeddings

    def _embed_sync(self, question: str, sentences: list[str]) -> tuple[list[float], list[list[float]]]:
        model = self.embeddings
        assert model is not None
        with self._lock:
            known = {s: self._cache[s] for s in sentences if s in self._cache}
        missing = [s for s in dict.fromkeys(sentences) if s not in known]
        clipped = [embedding_input(model, s) for s in missing]  # a sentence may be a whole unpunctuated reply
        known |= dict(zip(missing, model.embed_documents(clipped) if missing else [], strict=True))
        query = query_vector(model, question)
        with self._lock:
            for text in missing:
                self._cache[text] = known[text]
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return query, [known[s] for s in sentences]

    async def _similarities(self, question: str, sentences: list[str]) -> list[float | None]:
        if self.embeddings is None or not sentences:
            return [None] * len(sentences)
        query, vectors = await asyncio.to_thread(self._embed_sync, question, sentences)
        return [_cosine(query, v) for v in vectors]

    def _blend(self, coverage: float, similarity: float | None) -> float:
        if similarity is None:
            return coverage
        s = self.settings
        scaled = min(1.0, max(0.0, (similarity - s.similarity_floor) / (s.similarity_ceiling - s.similarity_floor)))
        return (1 - s.similarity_weight) * coverage + s.similarity_weight * scaled

    # --- question → sentences -------------------------------------------------------------------

    async def matches(
        self, question: str, docs: Sequence[Document], topic: frozenset[str] = frozenset()
    ) -> list[Match]:
        """Every unit of ``docs`` (sentence, list item, table row; :mod:`.units`) scored against ``question``,
        best first; a chunk that holds none of the question's names in full
        (:func:`~rags_expert.evidence.text.name_phrases`) has no match at all. ``topic``: terms of the question
        the whole knowledge base is about (its library's name, which most of its chunks hold), held by every
        chunk whether it repeats them or not.

        Question terms are weighted by how rare they are among the units scored (a local IDF): the
        subject that every sentence of a document repeats weighs little, the verb that picks the one
        sentence about it weighs much ("Who *organised* the Tidewater Festival?"). A unit's context (its
        chunk's title and heading, a list item's term, a table row's header) counts ``context_weight``.
        """
        wanted = question_terms(question)
        kind, category = expected_type(question), answer_category(question)
        hint = measure_hint(question)
        helds = [(terms(_chunk_header(doc) + " " + doc.page_content) | topic) & wanted for doc in docs]
        names = _required_names(question, wanted, docs, helds)
        name_terms = set().union(*name_phrases(question)) & wanted
        page_helds = _held_by_source(docs, helds)
        rows = []
        for i, doc in enumerate(docs):
            chunk_units = _chunk_units(doc, self.settings.labels)
            held = helds[i] | (page_helds[i] & name_terms)  # the page's names are its chunks' subject
            if names and not any(name <= held for name in names):
                continue  # about something else: none of the question's names in full
            subject = terms(_chunk_header(doc) + " " + _heading(chunk_units)) & wanted
            for unit in chunk_units:
                own = terms(unit.text)
                context = subject | (terms(unit.label) & wanted)
                hinted = hint is not None and hint in own
                absent = wanted - held
                rows.append(_Row(i, unit, own & wanted, context, absent, hinted, bool(absent & name_terms)))
        weight = _local_idf(wanted, [r.own for r in rows])
        # fsum: exactly rounded whatever the order, and sets iterate in an order that changes with the process's
        # hash seed; a plain sum's last bit then decided ties between chunks (the reranker's shared ranks)
        total = math.fsum(weight.values()) or 1.0
        context_weight = self.settings.context_weight
        sims = await self._similarities(question, [r.unit.quote for r in rows])
        ranked = []
        for row, sim in zip(rows, sims, strict=True):
            covered = math.fsum(weight[t] for t in row.own) + context_weight * math.fsum(
                weight[t] for t in row.context - row.own
            )
            cov = covered / total
            answers = _quotable(row.unit, kind, category) and self._answers(row, question, kind, category, sim)
            missing = math.fsum(weight[t] for t in row.absent) / total
            match = Match(row.doc, row.unit.quote, cov, sim, missing, answers, self._blend(cov, sim), row.unit.factual)
            bonus = self.settings.measure_bonus if row.hinted else 0.0  # ranking only: "34 metres *tall*"
            ranked.append(((match.score + bonus, answers), match))
        ranked.sort(key=lambda pair: pair[0], reverse=True)
        return [match for _, match in ranked]

    def _answers(self, row: _Row, question: str, kind: AnswerType, category: str | None, sim: float | None) -> bool:
        """See :attr:`Match.answers`. A code-name question's category ("which *argument*") need not be in the
        chunk (a parameter list does not say "argument"). One other absent term is allowed when the unit names
        the category; in a unit that holds a code name the question lacks, one (two) absent terms are allowed
        from ``paraphrase_similarity`` (``paraphrase_similarity_two``): the question said it in other words. An
        absent name of the question is never allowed."""
        if row.name_absent:
            return False
        if kind is AnswerType.CODE and row.unit.kind == "prose" and not _says_category(row.unit, category):
            return False  # prose answers "which option" by saying "option"; a parameter list or table need not
        absent = len(row.absent - _type_nouns(kind, category, question))
        text = row.unit.text if row.unit.kind == "row" else row.unit.quote
        if absent and not (absent == 1 and category is not None and names_category(row.unit.quote, category)):
            s, allowed = self.settings, 0
            if sim is not None and new_code(text, question):
                allowed = int(sim >= s.paraphrase_similarity) + int(sim >= s.paraphrase_similarity_two)
            if absent > allowed:
                return False
        if under_other_condition(row.unit.text, question):
            return False  # the fact holds under a condition the question does not ask about
        return holds_answer(text, question, kind)

    async def relevance(self, question: str, docs: Sequence[Document]) -> list[float]:
        """Per chunk, the score of its best-matching sentence (0 for a chunk without text)."""
        best = [0.0] * len(docs)
        for m in await self.matches(question, docs):
            best[m.doc] = max(best[m.doc], m.score)
        return best

    async def best_answer(self, question: str, docs: Sequence[Document]) -> Match | None:
        """The best sentence that holds an answer of the expected type and matches well enough, or None."""
        for m in await self.matches(question, docs):
            if m.score < self.settings.min_answer_score:
                return None
            if m.answers:
                return m
        return None

    async def closest(self, question: str, docs: Sequence[Document], k: int = 3) -> list[Match]:
        """The ``k`` units that match the question best (factual ones, each text once), for a "not found" reply to
        offer: the closest the chunks come to an answer, never presented as one."""
        out: list[Match] = []
        for m in await self.matches(question, docs):
            if len(out) == k:
                break
            if m.factual and all(m.sentence != o.sentence for o in out):
                out.append(m)
        return out

    # --- answer → chunks ------------------------------------------------------------------------

    def support(self, claims: Sequence[str], docs: Sequence[Document], *, prose_only: bool = False) -> list[Support]:
        """For each claim, the chunk whose unit (or pair of neighbouring units) holds most of its terms. With
        ``prose_only`` a code example supports nothing: a value read off ``Client(timeout=10)`` is not what the
        documentation says the default is."""
        windows: list[tuple[int, set[str]]] = []
        for i, doc in enumerate(docs):
            chunk_units = [u for u in _chunk_units(doc, self.settings.labels) if not (prose_only and u.kind == "code")]
            header = terms(_chunk_header(doc) + " " + _heading(chunk_units))
            sentence_terms = [terms(u.quote) for u in chunk_units] or [set()]
            for j, own in enumerate(sentence_terms):
                nxt = sentence_terms[j + 1] if j + 1 < len(sentence_terms) else set()
                windows.append((i, header | own | nxt))
        out = []
        for claim in claims:
            wanted = terms(strip_citations(claim))
            if not wanted:
                out.append(Support(claim, None, 1.0))
                continue
            best: tuple[int | None, float] = max(
                ((i, len(wanted & held) / len(wanted)) for i, held in windows), key=lambda t: t[1], default=(None, 0.0)
            )
            index, score = best
            out.append(Support(claim, index if score >= self.settings.min_support else None, score))
        return out
