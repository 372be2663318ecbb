"""The language a question is written in, so that the answer prompt can ask for an answer in it.

A small offline detector of our own: the question's words are counted against short lists of
function words (articles, pronouns, question words, auxiliaries) of English, French, German, Spanish
and Italian, and the language with the most hits wins when it is ahead of the others. Questions are
short and mostly names and content words; function words are what tells the languages apart, and
names (``Rémi Lange``, ``VIVA Media AG``) carry none. No model is downloaded; a question that does
not score clearly (a bare name, another language) gets ``None`` and the prompt falls back to
"the language of the question", which the answer model then reads itself.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "fr", "de", "es", "it"]
"""The languages :func:`detect_language` tells apart (ISO 639-1 codes)."""

#: Language code -> its English name, as written into the answer prompt.
NAMES: dict[Language, str] = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian"}

#: What the answer prompt says when the detector cannot tell.
FALLBACK = "the language of the question"


def _words(text: str) -> frozenset[str]:
    """The set of the space-separated words of ``text``."""
    return frozenset(text.split())


_WORDS: dict[Language, frozenset[str]] = {
    "en": _words(
        "the of and to is are was were what which who whom whose when where why how did does do has have "
        "had an by for with that this these those from his her their its it be been as at or many much "
        "there than into about both"
    ),
    "fr": _words(
        "le la les des du un une est et qui que quel quelle quels quelles quoi où comment pourquoi combien "
        "dans pour par avec sur au aux il elle ils elles sont été était ont ce cette ces son sa ses leur "
        "leurs lequel laquelle lesquels d' l' qu' ne pas se"
    ),
    "de": _words(
        "der die das und ist was wer wie wo wann warum welche welcher welches welchem welchen ein eine einer "
        "einem einen nicht mit von zu den dem des für auf im hat haben wurde wurden sind war waren auch "
        "sich es aus bei nach wofür woher wohin womit wieviel wie viele seine ihre ihr sein zum zur"
    ),
    "es": _words(
        "el los las del y es qué quién quiénes cuál cuáles cuándo dónde cómo por para con una fue su sus "
        "se al lo son fueron este esta ese esa cuántos cuántas"
    ),
    "it": _words(
        "il lo gli della dello delle degli di e è chi che cosa quale quali quando dove come perché per con "
        "una uno sono stato stata nel nella nei sul sua suo suoi era"
    ),
}

_TOKEN = re.compile(r"[^\W\d_]+(?:['’](?=\w))?", re.UNICODE)


def detect_language(text: str) -> Language | None:
    """The code (``en``, ``fr``, ``de``, ``es``, ``it``) of the language ``text`` is written in, or None
    when no language leads on function words."""
    tokens = [t.lower().replace("’", "'") for t in _TOKEN.findall(text)]
    scores = {code: sum(t in words for t in tokens) for code, words in _WORDS.items()}
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    if top == 0 or top == second:
        return None
    return best


def language_name(text: str) -> str:
    """The English name of the language of ``text`` for the answer prompt, or :data:`FALLBACK`."""
    code = detect_language(text)
    return NAMES[code] if code else FALLBACK
