"""What kind of answer a question asks for, and whether a sentence holds one.

A sentence can only answer "When was X built?" if it holds a year or a date that the question does not
already hold; "Who ...?" needs a name (a capitalised word the question does not contain); "How many
...?" a number. This is a cheap, model-free check that keeps a sentence which merely repeats the
question's words from passing as its answer.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache

from rags_expert.evidence.code import new_code
from rags_expert.evidence.text import stem, terms, words
from rags_expert.retrieval.sparse import STOPWORDS

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_YEAR_OR_DATE = re.compile(rf"\b(?:1\d{{3}}|20\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)? century|(?:{_MONTHS})\b)", re.I)
_NUMBER_WORDS = frozenset(
    [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "dozen",
        "half",
        "once",
        "twice",
        "single",
        "double",
    ]
)
_MEASURES = (
    "many|much|tall|long|far|high|old|big|large|deep|wide|heavy|hot|fast|often|small|short|cold|warm|steep|expensive"
)
_NUMBER_QUESTION = re.compile(rf"\bhow ({_MEASURES})\b", re.I)
# "When was it built?" asks for a date; "When is the handler called?" (documentation) asks for a condition
_YEAR_QUESTION = re.compile(
    r"\b(when (?:was|were|did|had)|what year|which year|what date|which date|in what year|since when)\b", re.I
)
_DEFAULT_QUESTION = re.compile(
    r"\b(defaults?|default value|(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:value|version|release|port|level|status code|"
    r"limit|timeout))\b",
    re.I,
)
_CODE_NOUNS = (
    "argument|arg|parameter|param|kwarg|keyword|option|flag|switch|setting|exception|error|warning|class|function|"
    "method|command|subcommand|module|attribute|property|variable|env var|key|field|decorator|hook|callback|"
    "package|encoding|codec|format|header|extension|backend|import|type|object|directive|name|section|table|"
    "file|path|directory|folder|url|endpoint|route|hook id|plugin|tool|library|dependency|processor|renderer|"
    "formatter|handler|logger|factory|middleware|response|request|parser|serializer|backend|adapter|context manager"
)
_CODE_NOUN_PHRASE = rf"\b(?:which|what)\s+(?:[\w-]+\s+){{0,3}}?(?P<noun>{_CODE_NOUNS})s?\b"
""""which argument", "what extra package": a question word, up to three modifiers, then the first code noun."""
_CODE_QUESTION = re.compile(
    rf"{_CODE_NOUN_PHRASE}|\bequivalents?\b"
    r"|\bwhat (?:is|are) (?:[\w-]+\s+){0,3}?called\b|\ban? alias (?:for|of)\b"
    r"|\bhow (?:do|can|should|would) (?:i|you|we|one) (?:import|spell|name)\b"
    r"|\bwhat (?:do|does|should|must) (?:i|you|we|one) (?:have to |need to )?(?:pip )?install\b",
    re.I,
)
_NAME_QUESTION = re.compile(r"\b(who|whom|whose|where)\b", re.I)


_MIN_NEW_TERMS = 3
"""An open question ("What does X do?") needs a sentence that says something: three terms it does not hold."""


class AnswerType(StrEnum):
    """The kind of answer a question asks for."""

    DATE = "date"
    VALUE = "value"
    NUMBER = "number"
    CODE = "code"
    NAME = "name"
    ANY = "any"


def expected_type(question: str) -> AnswerType:
    """The answer type of a question: a date, a (default) value, a number, a code name (which argument /
    option / exception / command, X's equivalent of Y), a name (who/where) or anything new."""
    if _YEAR_QUESTION.search(question):
        return AnswerType.DATE
    if _DEFAULT_QUESTION.search(question):
        return AnswerType.VALUE
    if _NUMBER_QUESTION.search(question):
        return AnswerType.NUMBER
    if _CODE_QUESTION.search(question):
        return AnswerType.CODE
    if _NAME_QUESTION.search(question):
        return AnswerType.NAME
    return AnswerType.ANY


_NUMBER_WORD = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_QUANTITY = re.compile(
    rf"(?P<currency>[$£€]\s?)?(?<![\w.])(?P<number>\d[\d,.]*\d|\d|(?:{_NUMBER_WORD})(?:-[^\W\d_]+)?)\b"
    r"(?P<after>\s*%|\s+(?P<unit>[^\W\d_][\w-]*))?",
    re.IGNORECASE | re.UNICODE,
)


def _has_number(text: str, known: set[str]) -> bool:
    """A quantity the question does not hold: a number (digits or words) with its unit or counted noun right
    after it ("34 metres", "640 workers", "twenty-six years"), a percentage or an amount of money. A bare
    number ("built in 1871 on Gull Rock", "in 1986, organised …") does not answer "how tall" or "how many"."""
    for m in _QUANTITY.finditer(text):
        number = m.group("number").lower()
        if stem(number) in known:
            continue  # the question's own number ("in 2019")
        unit = (m.group("unit") or "").lower()
        if m.group("currency") or (m.group("after") or "").strip() == "%" or (unit and unit not in STOPWORDS):
            return True
    return False


def _has_name(text: str, known: set[str]) -> bool:
    """A capitalised word that is not a word of the question (the first word counts only when the next
    one is capitalised too: "Mara Quill built it", not "Since 1998 ...")."""
    tokens = words(text)
    for i, word in enumerate(tokens):
        if not word[0].isupper() or stem(word.lower()) in known or word.lower() in STOPWORDS:
            continue
        if i > 0 or (len(tokens) > 1 and tokens[1][0].isupper()):
            return True
    return False


# a hyphenated modifier is not the noun: "which *pre-commit* hook" asks for a hook
_CATEGORY_QUESTION = re.compile(
    r"\b(?:which|what|how many|how much)\s+(?:\w+(?:-\w+)+\s+)?([^\W\d_]{3,})\b(?!-)", re.I | re.UNICODE
)
_NOT_CATEGORIES = frozenset({"kind", "type", "sort", "sorts", "kinds", "types", "part", "one", "ones"})
_MIN_SHARED_PREFIX = 4


# "what extra *package*", "which environment *variable*": the first code noun after the question word names the
# answer, whatever words come before it
_CODE_CATEGORY = re.compile(rf"{_CODE_NOUN_PHRASE}(?!-)", re.I)


@lru_cache(maxsize=1024)
def answer_category(question: str) -> str | None:
    """The stem of the noun a question names its answer by ("which *rock*", "how many *people*", "what extra
    *package*": the first code noun, after its modifiers), or None ("what did", "which of")."""
    code = _CODE_CATEGORY.search(question)
    if code is not None and " " not in code.group("noun"):  # "env var", "context manager": the older reading
        return stem(code.group("noun").lower())
    match = _CATEGORY_QUESTION.search(question)
    if match is None:
        return None
    noun = match.group(1).lower()
    return None if noun in STOPWORDS or noun in _NOT_CATEGORIES else stem(noun)


def _is_category_word(word: str, category: str) -> bool:
    """``word`` names ``category``: same stem, or one stem starts the other ("mount" / "mountain")."""
    own = stem(word.lower())
    short, long = sorted((own, category), key=len)
    return len(short) >= _MIN_SHARED_PREFIX and long.startswith(short)


def mentions_category(text: str, category: str) -> bool:
    """Whether ``text`` says the word of the answer's category ("the `BLACK_NUM_WORKERS` environment *variable*")."""
    return any(_is_category_word(word, category) for word in words(text))


def names_category(text: str, category: str) -> bool:
    """Whether ``text`` joins a name or a number to the answer's category: "on *Gull Rock*", "*Mount Arden*",
    "the *Zephyr lighthouse*", "a crowd of *18,000 people*"."""
    tokens = words(text)
    for i, word in enumerate(tokens):
        if not _is_category_word(word, category):
            continue
        before = tokens[max(0, i - 2) : i]
        if any(t[0].isdigit() or t.lower() in _NUMBER_WORDS for t in before):
            return True  # 18,000 people
        prev = tokens[i - 1] if i > 0 else ""
        if prev[:1].isupper() and prev.lower() not in STOPWORDS and (i > 1 or word[0].isupper()):
            return True  # Gull Rock, the Zephyr lighthouse
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if word[0].isupper() and nxt[:1].isupper() and nxt.lower() not in STOPWORDS:
            return True  # Mount Arden
    return False


_LITERAL = re.compile(
    r"(?<![\w.])(?:\d[\d,._]*|true|false|none|null|nil)(?![\w])|(?<!\w)[\"“'][^\"”'\n]{0,40}[\"”'](?!\w)",
    re.I | re.UNICODE,
)


_WEAK_NUMBERS = re.compile(r"\b(?:single|double|half|once|twice)\b", re.I)
"""Words that count things in prose ("a single line") but are no setting's value."""


def _has_value(text: str, question: str, known: set[str]) -> bool:
    """A value the question does not hold: a number (bare, or in words with a unit), a literal (True, None,
    a quoted string, the empty string) or a code name."""
    for m in _LITERAL.finditer(text):
        value = m.group(0).strip("\"“”'").lower()
        if not value and m.group(0) not in question:
            return True  # the empty string ("The default `env_prefix` is `''`")
        if value and stem(value) not in known and value not in question.lower():
            return True
    return _has_number(_WEAK_NUMBERS.sub(" ", text), known) or bool(new_code(text, question))


_DIGITS = re.compile(r"(?<![\w.])\d[\d,._]*(?![\w])", re.UNICODE)


def new_numbers(text: str, question: str) -> set[str]:
    """The numbers written in digits in ``text`` that the question does not hold ("22.0", "131072", "5"):
    what a draft must not change. A version, a size or a port read off a neighbouring sentence is wrong."""
    asked = {m.rstrip(".,") for m in _DIGITS.findall(question)}
    return {m.rstrip(".,").replace(",", "") for m in _DIGITS.findall(text) if m.rstrip(".,") not in asked} - {""}


_NAMED_CATEGORIES = frozenset(
    stem(noun) for noun in ("package", "library", "tool", "dependency", "plugin", "extension")
)
"""Code nouns whose answers are proper names as often as identifiers."""


def holds_answer(text: str, question: str, kind: AnswerType | None = None) -> bool:
    """Whether ``text`` holds something of the question's answer type that the question itself does not."""
    kind = kind or expected_type(question)
    known = terms(question)
    if kind is AnswerType.DATE:
        return any(stem(m.lower()) not in known for m in _YEAR_OR_DATE.findall(text))
    if kind is AnswerType.VALUE:
        return _has_value(text, question, known)
    if kind is AnswerType.NUMBER:
        return _has_number(text, known)
    if kind is AnswerType.CODE:
        if answer_category(question) in _NAMED_CATEGORIES and _has_name(text, known):
            return True  # a package or a tool is named in prose ("Requires the Colorama package")
        return bool(new_code(text, question))
    if kind is AnswerType.NAME:
        return _has_name(text, known) or bool(new_code(text, question))
    asked = _DEFINITION_QUESTION.match(question)
    if asked and not _OF_PHRASE.search(asked.group("subject")) and not defines(text, asked.group("subject")):
        return False  # "What is Starlette?" asks what it is: "Starlette has a growing community" does not say
    return len(terms(text) - known) >= _MIN_NEW_TERMS


_DEFINITION_QUESTION = re.compile(
    r"\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<subject>[^\s?]+(?:\s+[^\s?]+){0,3}?)\s*\??\s*$", re.I
)
"""A question asking what something is ("What is Starlette?", "What are processors?"): answered by a definition."""
_OF_PHRASE = re.compile(r"\s(?:of|for|in|on|to|with|by|from|about)\s", re.I)
"""A subject with a preposition asks for a property of something ("What is the CamelCase alias *of* get_logger?"),
not what a thing is."""


def defines(text: str, subject: str) -> bool:
    """Whether ``text`` says what ``subject`` is: the subject itself (not "Starlette-Compress" for "Starlette"), then
    within a few words "is a / are the / was one …", or an apposition ("Black, a formatter, …")."""
    name = re.escape(subject.strip("`'\""))
    return (
        re.search(
            rf"(?<![\w-]){name}(?![\w-])[`*_'\")\]]*(?:\s+\S+){{0,4}}?\s+(?:is|are|was|were)\s+(?:an?|the|one|not)\b"
            rf"|(?<![\w-]){name}(?![\w-])[`*_'\")\]]*,\s+an?\s",
            text,
            re.I,
        )
        is not None
    )
