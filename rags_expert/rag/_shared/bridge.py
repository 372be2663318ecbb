"""The bridge of a multi-hop question, found by the evidence (no model call): the ``small`` profile's hop.

A bridge question ("Which county is the birthplace of the director of *Film X* in?") needs a fact about an entity
it does not name: the first search finds the sentence that names it ("*Film X* was directed by *Jane Roe*"), the
second searches for that entity. :func:`bridge_names` lists the names a sentence holds that the question lacks
(not its code names: in a library's documentation a hop for a code name mostly quoted a wrong pair of sentences);
:func:`plan_bridge` picks the best matching factual sentence of the relevant chunks that holds one; :func:`hop_quote`
finds the sentence of the hop's chunks that answers the question about the bridge. A code line or a lead-in is never
quoted.

Often one search already brings both documents (the model-free reranker lifts the one the best chunk names):
:func:`linked_pairs` finds two chunks where one names the other's title and together they hold most of the
question's terms, though neither does alone; :func:`pair_quote` quotes the naming sentence and the answer sentence
of the named chunk, as after a hop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from rags_expert.evidence import EvidenceScorer, Match, holds_answer, question_terms, terms
from rags_expert.evidence.code import under_other_condition
from rags_expert.evidence.reader.features import heading_of
from rags_expert.evidence.rerank import MIN_TITLE_CHARS, linked, names_title, title_of

_CONNECTOR = r"(?:of|the|de|du|des|la|le|von|van|der|den|mit|y|di|da)"
_MONTHS = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
_NOT_A_NAME = re.compile(r"(?:[A-Z][a-z]+(?:ish|ese|ian|ean|an|ch|i)|\d.*|[A-Z][a-z]?)")
"""A single word that names nothing to search: a nationality adjective ("British", "Italian"), a number, an
initial."""
MAX_NAME_CHARS = 80
"""The longest name searched for: a longer run of capitalised words (a title-case headline, a table of names) or
quoted text names no one thing, and it would become the follow-up search and the hop's progress line whole."""
_CAPITAL = r"[A-Z0-9][\w'’.\-]*"
_NAME = re.compile(rf"(?<![\w'’]){_CAPITAL}(?:\s+(?:{_CONNECTOR}\s+)*{_CAPITAL})*")
_QUOTED = re.compile(rf"[\"“]([A-Z0-9][^\"“”]{{1,{MAX_NAME_CHARS - 1}}})[\"”]")
MAX_SENTENCES = 3
"""Best matching sentences of the relevant chunks searched for a bridge, best first."""
MAX_NAMES = 3
"""Names of the bridge sentence searched for together (the first is not always the one the question needs)."""
SEPARATOR = "; "


@dataclass(frozen=True)
class Bridge:
    """The bridge names, the sentence that names them and the chunk that sentence is in (index into the chunks)."""

    names: tuple[str, ...]
    sentence: str
    doc: int

    @property
    def query(self) -> str:
        """The follow-up search: the names (measured on HotpotQA dev, the question's words added only pulled the
        first search's chunks back)."""
        return SEPARATOR.join(self.names)


def bridge_names(sentence: str, question: str, subject: str = "", text: str = "") -> list[str]:
    """Names (runs of capitalised words, quoted titles; at most :data:`MAX_NAME_CHARS` characters each) of
    ``sentence`` whose terms are not all in ``question`` nor
    in ``subject`` (the chunk's title: what the sentence is about), in order. With ``text`` (the chunks the sentence
    was found in), a single word is no name when ``text`` also writes it in lower case or capitalises it only where
    a sentence starts (:func:`_common_word`)."""
    known = terms(question) | terms(subject)
    out: list[str] = []
    found = [m.group(1) for m in _QUOTED.finditer(sentence)]
    found += [m.group(0).strip(" .'’-") for m in _NAME.finditer(sentence)]
    for name in found:
        own = terms(name)
        if len(name) > MAX_NAME_CHARS or not own or own <= known or name in out or _names_nothing(name):
            continue
        if text and " " not in name and _common_word(name, text):
            continue
        out.append(name)
    return out


_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)[\W_]*$")


def _common_word(word: str, text: str) -> bool:
    """Whether ``text`` writes ``word`` in lower case ("attributes", "json": a common word or a format, capitalised
    at a sentence start or in a heading), or capitalises it only at sentence starts ("Attributes can have …"):
    searching for it finds the topic, not an entity (measured on the real-documentation dev half)."""
    if re.search(rf"(?<![\w.]){re.escape(word.lower())}(?![\w(])", text):
        return True
    starts = [m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(word)}(?![\w(])", text)]
    return bool(starts) and all(_SENTENCE_START.search(text[max(0, i - 40) : i]) for i in starts)


def _names_nothing(name: str) -> bool:
    """A date ("16 June 2014"), or a single word that names nothing to search (:data:`_NOT_A_NAME`)."""
    words = name.split()
    if any(w.lower().strip(",.") in _MONTHS for w in words):
        return True
    return len(words) == 1 and _NOT_A_NAME.fullmatch(name) is not None


async def plan_bridge(question: str, docs: Sequence[Document], evidence: EvidenceScorer) -> Bridge | None:
    """The first :data:`MAX_NAMES` bridge names of the best matching factual sentence of ``docs`` (no code line, no
    lead-in: it is quoted in the answer) that holds one (None: the chunks already answer the question, or name
    nothing it lacks)."""
    if await evidence.best_answer(question, docs) is not None:
        return None
    text = "\n".join(d.page_content for d in docs)
    for m in [m for m in await evidence.matches(question, docs) if _states(m, question)][:MAX_SENTENCES]:
        meta = docs[m.doc].metadata or {}
        subject = f"{meta.get('title') or ''} {meta.get('section') or ''}"  # the page's own headings name no bridge
        names = bridge_names(m.sentence, question, subject, text)
        if names:
            return Bridge(tuple(names[:MAX_NAMES]), m.sentence, m.doc)
    return None


async def hop_quote(
    question: str, bridge: str, docs: Sequence[Document], evidence: EvidenceScorer, said: str = ""
) -> Match | None:
    """The best sentence of the hop's chunks ``docs`` that is on a bridge name's own page (:func:`about_name`), says
    something of the question that the bridge sentence ``said`` does not, and holds an answer of the question's type
    besides the names, or None. ``bridge``: the names, joined."""
    names = split_bridge(bridge)
    rest = question_terms(question) - terms(said)
    for m in await evidence.matches(f"{question} {bridge}", docs):
        if not _states(m, question):
            continue  # a code line, a lead-in or another condition's fact is never quoted as the fact
        if rest and not rest & terms(m.sentence):
            continue  # says nothing the bridge sentence left open
        if about_name(docs[m.doc], names) and holds_answer(_without(m.sentence, names), question):
            return m
    return None


def about_name(doc: Document, names: Sequence[str]) -> bool:
    """Whether ``doc`` is a bridge name's own page: its title or a heading of its section names one of ``names``,
    in any case, whole ("Creed (band)" for "Creed"), by its last word ("Timeline of Shakespeare criticism" for
    "William Shakespeare": a surname, a noun phrase's head), or is itself a whole part of it (a page "Quill" for
    "Mara Quill"). A page sharing only some other word or word stem with the name mentions it: on the dev halves, the
    two-quote answers quoted from such pages were wrong ("HTTP Routing > Host-based routing" for "HTTP Host Header",
    an option "linkcheck_retries" for the header "Retry-After")."""
    headings = [h.strip() for h in heading_of(doc).split(" > ")]
    return any(_names(heading, name) for heading in headings if heading for name in names)


def _names(heading: str, name: str) -> bool:
    """Whether ``heading`` names ``name`` whole or by its last word, or is a whole part of it (:func:`about_name`)."""
    last = name.split()[-1] if " " in name else ""
    return (
        names_title(heading, name)
        or (len(last) >= MIN_TITLE_CHARS and names_title(heading, last))
        or (len(heading) >= MIN_TITLE_CHARS and names_title(name, heading))
    )


def _states(match: Match, question: str) -> bool:
    """Whether a sentence may be quoted as a fact of the answer: not a code line, not a lead-in, and not a fact
    under a condition naming code the question lacks (:func:`~rags_expert.evidence.code.under_other_condition`)."""
    return match.factual and not under_other_condition(match.sentence, question)


def split_bridge(bridge: str) -> list[str]:
    """The names of a bridge query (:attr:`Bridge.query`)."""
    return bridge.split(SEPARATOR)


def _without(sentence: str, names: Sequence[str]) -> str:
    """``sentence`` without the bridge names: the bridge itself is not the answer ("Mara Quill wrote three
    screenplays" does not say where she was born)."""
    for name in names:
        sentence = sentence.replace(name, " ")
    return sentence


@dataclass(frozen=True)
class Pair:
    """Two chunks of one question: ``a`` names the title of ``b``; ``coverage``: the share of the question's terms
    the two hold together (text and titles)."""

    a: int
    b: int
    coverage: float


def linked_pairs(question: str, docs: Sequence[Document], min_coverage: float) -> list[Pair]:
    """The pairs of ``docs`` where one chunk names another document's title as it is written (:func:`~rags_expert.
    evidence.rerank.linked`: "Ines Harrow", not a page "Testing" in "testing"; nor a one-word title the chunks also
    write in lower case, a topic like "Middleware", :func:`_common_word`), the named one adds a term of the
    question, and together they hold ``min_coverage`` of its terms; best covered first. A title the question
    names is no bridge: the question asks about it directly, and in a library's documentation it is the library
    itself ("Python-Markdown", the title of the front page, which every page names)."""
    wanted = question_terms(question)
    if not wanted:
        return []
    held = [terms(f"{doc.metadata.get('title') or ''} {doc.page_content}") & wanted for doc in docs]
    text = "\n".join(doc.page_content for doc in docs)
    pairs = []
    for a in range(len(docs)):
        for b, named in enumerate(linked(docs, a, exact_case=True)):
            coverage = len(held[a] | held[b]) / len(wanted)
            title = title_of(docs[b])
            bridge = not _topic(title, text) and not names_title(question, title)
            if named and held[b] - held[a] and coverage >= min_coverage and bridge:
                pairs.append(Pair(a, b, coverage))
    return sorted(pairs, key=lambda p: -p.coverage)


def _topic(title: str, text: str) -> bool:
    """A one-word title ``text`` also writes in lower case, or capitalises only at sentence starts ("Middleware"):
    what the pages are about, not a second document (:func:`_common_word`)."""
    return " " not in title and _common_word(title, text)


async def pair_quote(
    question: str, docs: Sequence[Document], evidence: EvidenceScorer, min_coverage: float
) -> tuple[Pair, str, Match] | None:
    """For the best linked pair that answers: the sentence of ``a`` naming ``b``'s title (the one matching the
    question best) and the sentence of ``b`` that answers the question about it (:func:`hop_quote`); or None."""
    for pair in linked_pairs(question, docs, min_coverage):
        title = title_of(docs[pair.b])
        said = next(
            (
                m.sentence
                for m in await evidence.matches(question, [docs[pair.a]])
                if _states(m, question) and names_title(m.sentence, title, exact_case=True)
            ),
            None,
        )
        if said is None:
            continue
        match = await hop_quote(question, title, [docs[pair.b]], evidence, said)
        if match is not None:
            return pair, said, match
    return None
