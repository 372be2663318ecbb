"""Words, content terms and sentences: the lexical side of the evidence signals.

Content terms are lower-cased, stemmed (Snowball) words without stop words or question words, with
numbers normalised (``2,410`` and ``2410`` are one term), so that "Who founded the mill?" and "the
mill was founded by ..." share ``found`` and ``mill``.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from rags_expert.retrieval.sparse import STOPWORDS

_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_CITATION = re.compile(r"\s*\[\d+(?:\s*[,;-]\s*\d+)*\]")
# a sentence ends at . ! ? (and closing quotes/brackets) followed by space and a capital, digit or quote
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "mt", "no", "vs", "etc", "e.g", "i.e", "prof", "jr", "sr"})

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
    }
)
"""Words that shape a question rather than name what it is about (``year`` in "what year": the
answer sentence says ``1962``, not "year")."""

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of a lower-cased word (numbers lose their thousands separators instead)."""
    if word[:1].isdigit():
        return word.replace(",", "")
    return str(_STEMMER.stemWord(word))


def words(text: str) -> list[str]:
    """The words and numbers of ``text``, in order, as written."""
    return _WORD.findall(text)


def terms(text: str, *, drop: frozenset[str] = frozenset()) -> set[str]:
    """The content terms of ``text``: stemmed, without stop words (and without ``drop``)."""
    out = set()
    for word in words(text):
        low = word.lower()
        if low in STOPWORDS or low in drop:
            continue
        out.add(stem(low))
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
    """``text`` without its ``[n]`` markers."""
    return _CITATION.sub("", text).strip()


def is_heading(line: str) -> bool:
    """A short line without end punctuation: a title or a heading path, not the start of a wrapped sentence."""
    line = line.strip()
    return bool(line) and line[-1] not in ".!?,;:" and len(line.split()) <= 12


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (headings and list items count as sentences; abbreviations do not end one)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:#|[-*+] |\d+[.)] |\|))", text):  # table rows stand alone
        first, _, rest = block.strip().partition("\n")
        if rest and is_heading(first):  # a chunk's heading path ("Title > Section") on its own line
            out.append(" ".join(first.split()).lstrip("#*-+ ").strip())
            block = rest
        line = " ".join(block.split()).lstrip("#*-+ ").strip()
        if not line:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            before = line[start : match.start()].rsplit(" ", 1)[-1].rstrip(".").lower()
            if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
                continue  # "Mt. Arden", "J. Smith"
            out.append(line[start : match.start()].strip())
            start = match.end()
        out.append(line[start:].strip())
    return [s for s in out if s]


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
