"""Words, content terms and sentences: the lexical side of the evidence signals.

Content terms are lower-cased, stemmed (Snowball) words without stop words or question words, with
numbers normalised (``2,410`` and ``2410`` are one term), so that "Who founded the mill?" and "the
mill was founded by ..." share ``found`` and ``mill``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

from rags_expert.evidence.units import units
from rags_expert.retrieval.sparse import STOPWORDS

_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
# from the start of a whitespace run only (a match tried at each of its characters was quadratic)
_CITATION = re.compile(r"(?<!\s)\s*+\[\d+(?:\s*+[,;-]\s*+\d+)*+\]")
_CUT_CITATION = re.compile(r"(?<!\s)\s*+\[\s*+\d[\d\s,;-]*+\Z")
"""A marker the reply was cut inside, at the token cap ("… and [3] and [4"): no number the answer states."""

QUESTION_WORDS = frozenset(
    {
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "many",
        "much",
        "name",
        "named",
        "year",
        "date",
        "number",
        "kind",
        "type",
        "can",
        "could",
        "would",
        "should",
        "tell",
        "me",
        "please",
        "you",
        "know",
        "called",
        "make",
        "get",
        "want",
        "need",
        "way",
        "so",
        "possible",
        "able",
        "let",
        "lets",
    }
)
"""Words that shape a question rather than name what it is about (``year`` in "what year": the
answer sentence says ``1962``, not "year")."""

_STEMMER = snowballstemmer.stemmer("english")


# British spellings in their American form, so that a question asking about "coloured" output or how to
# "serialise" an object meets documentation written with "colored" and "serialize" (and the other way round).
# Applied to both sides alike, so a word that only looks British ("promise", "detour") merely gets a second
# spelling of its own; each ending needs a few letters before it, so "four", "hour", "rise" and "raise" are left
# alone.
_AMERICAN = (
    (re.compile(r"(?<=\w{2})our(s|ed|ing|ful|ite|ites|able|less)?$"), r"or\1"),  # colour, behaviour, favourite
    (re.compile(r"(?<=\w{3})is(e|es|ed|ing|er|ers|ation|ations)$"), r"iz\1"),  # serialise, initialisation
    (re.compile(r"(?<=\w{2})ys(e|es|ed|ing|er|ers)$"), r"yz\1"),  # analyse
    (re.compile(r"(?<=\w{2})tre(s)?$"), r"ter\1"),  # centre, metre
    (re.compile(r"(?<=\w{3})logue(s)?$"), r"log\1"),  # catalogue, dialogue
)


def _american(word: str) -> str:
    """``word`` (lower-cased) with a British spelling ending written the American way."""
    for pattern, replacement in _AMERICAN:
        word = pattern.sub(replacement, word)
    return word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of a lower-cased word, British spellings as American ones (numbers lose their thousands
    separators instead)."""
    if word[:1].isdigit():
        return word.replace(",", "")
    return str(_STEMMER.stemWord(_american(word)))


def words(text: str) -> list[str]:
    """The words and numbers of ``text``, in order, as written."""
    return _WORD.findall(text)


FUNCTION_WORDS = frozenset(
    {
        "too",
        "off",
        "out",
        "up",
        "down",
        "without",
        "only",
        "just",
        "very",
        "any",
        "some",
        "such",
        "own",
        "same",
        "than",
        "again",
        "also",
        "yet",
        "else",
        "ever",
        "even",
        "instead",
        "rather",
        "don't",
        "doesn't",
        "isn't",
        "aren't",
        "can't",
        "won't",
        "i'm",
        "i've",
        "we",
        "our",
        "your",
        "my",
        "me",
        "us",
    }
)
"""Function words the retrieval's stop list (kept short for BM25) lets through, which name no content: a
question's "without" or "too" is not a term a chunk must hold."""


# The parts of a CamelCase identifier: "TrustedHostMiddleware" → Trusted, Host, Middleware; "GZipResponder" → G, Zip,
# Responder; "HTTPException" → HTTP, Exception.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]{2}")  # not an acronym's plural: "APIs", "URLs"


@lru_cache(maxsize=16384)
def identifier_terms(word: str) -> frozenset[str]:
    """The terms a CamelCase identifier names besides itself: each part, and each two neighbouring parts joined
    ("WebSocketException" → web, socket, exception, websocket, socketexception), so that a question about "the
    trusted host middleware" or "the WebSocket exception" meets ``TrustedHostMiddleware`` and
    ``WebSocketException``. Empty for a word that is not CamelCase."""
    if not _CAMEL.search(word):
        return frozenset()
    parts = [p.lower() for p in _CAMEL_PART.findall(word)]
    joined = [a + b for a, b in zip(parts, parts[1:], strict=False)]
    return frozenset(stem(p) for p in parts + joined if len(p) > 1 and p not in STOPWORDS and p not in FUNCTION_WORDS)


def terms(text: str, *, drop: frozenset[str] = frozenset()) -> set[str]:
    """The content terms of ``text``: stemmed, without stop words and function words (and without ``drop``); a
    CamelCase identifier adds its parts (:func:`identifier_terms`)."""
    out = set()
    for word in words(text):
        low = word.lower()
        if low in STOPWORDS or low in FUNCTION_WORDS or low in drop:
            continue
        out.add(stem(low))
        out |= identifier_terms(word)
    return out


_HOW_ADJECTIVE = re.compile(r"\bhow\s+([^\W\d_]+)", re.I | re.UNICODE)


def question_terms(question: str) -> set[str]:
    """The content terms of a question: its question words dropped, and the adjective of "how far / how
    hot / how tall" too (the answer says "22 miles away", not "far")."""
    return terms(_HOW_ADJECTIVE.sub("how", question), drop=QUESTION_WORDS)


def measure_hint(question: str) -> str | None:
    """The stem of the adjective of a "how tall / how far / how deep" question, which ``question_terms`` drops
    but a sentence that says it ("is 34 metres *tall*") answers better; None for "how many / how much"."""
    match = _HOW_ADJECTIVE.search(question)
    word = match.group(1).lower() if match else ""
    return stem(word) if word and word not in STOPWORDS and word not in QUESTION_WORDS else None


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` markers, also one left open where the reply was cut off."""
    return _CUT_CITATION.sub("", _CITATION.sub("", text)).strip()


def split_sentences(text: str) -> list[str]:
    """The texts of a chunk's units, in order: headings, sentences, whole short list items, table rows, code
    lines (:func:`rags_expert.evidence.units.units`)."""
    return [unit.text for unit in units(text)]


def name_phrases(question: str) -> list[set[str]]:
    """The terms of each name or number of a question: runs of capitalised words after the first word
    ("Eiffel Tower" → ``{"eiffel", "tower"}``) and each number. A passage about something else does not
    hold a whole one ("the Eiffel Tower" is not "the granite tower of the Zephyr lighthouse")."""
    tokens = words(question)
    phrases: list[set[str]] = []
    run: set[str] = set()
    for i, word in enumerate(tokens):
        low = word.lower()
        if word[0].isdigit():
            phrases.append({stem(low)})
        elif i > 0 and word[0].isupper() and low not in QUESTION_WORDS:
            if low not in STOPWORDS:
                run.add(stem(low))
            continue
        if run:
            phrases.append(run)
            run = set()
    if run:
        phrases.append(run)
    return phrases


@dataclass(frozen=True)
class TermFrequencies:
    """How many chunks of a sample hold each content term: the knowledge base's own document frequencies (a sample
    of its chunks, read once), or the retrieved chunks' when the retriever is not our knowledge base. A term most
    chunks hold ("set", the library's own name) says little when a chunk lacks it; a term none holds ("HTTP/3" in a
    server's docs that never mention it) says most."""

    chunks: int
    df: Mapping[str, int]

    @classmethod
    def of(cls, texts: Iterable[str]) -> TermFrequencies:
        """The frequencies of ``texts`` (each one chunk)."""
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            df.update(terms(text))
        return cls(n, df)

    def topic(self, question: str, share: float) -> frozenset[str]:
        """The terms of the question's names (:func:`name_phrases`) that at least ``share`` of the chunks hold: what
        the knowledge base is about ("Gunicorn" in Gunicorn's docs), which a chunk need not repeat to answer."""
        if not self.chunks:
            return frozenset()
        named = set().union(*name_phrases(question))
        return frozenset(t for t in named if self.df.get(t, 0) >= share * self.chunks)

    def idf(self, term: str) -> float:
        """``log(1 + N / (1 + df))``: a term no chunk of the sample holds weighs most."""
        return math.log(1 + self.chunks / (1 + self.df.get(term, 0)))
