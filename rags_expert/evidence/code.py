"""Code names in documentation text: what a question about a library is usually answered with.

A keyword argument (``retries=3``), an option (``--line-length``), an exception (``KeyError``), a dotted path
(``starlette.middleware.cors.CORSMiddleware``), an environment variable (``APP_ENV``), a call (``run()``):
written in backticks, or recognisable by its shape (underscores, dots, inner capitals, leading dashes,
brackets). :func:`new_code` finds the ones a sentence holds that the question does not, which is what
"Which argument …?", "Which exception …?" or "What is A's equivalent of B?" asks for.
"""

from __future__ import annotations

import re

_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
_SHAPED = re.compile(
    r"(?<![\w.`/-])(?:"
    r"--?[a-z][\w-]*"  # --line-length, -v
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?"  # starlette.config.Config, index.html, app.run()
    r"|[a-z][a-z0-9]*_[a-z0-9_]+"  # max_connections
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+"  # APP_ENV
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+(?:Error|Exception)?"  # StaticFiles, KeyError
    r"|[A-Za-z_]\w*\(\)"  # run()
    r"|[A-Za-z]+-\d+"  # utf-8, latin-1
    r")(?![\w`])"
)
_NOT_CODE = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m"})
_WORD = re.compile(r"[A-Za-z0-9]+")


def code_names(text: str) -> set[str]:
    """The code names of ``text``, lower-cased: backticked spans (up to their first ``=``, ``(`` or space)
    and identifier-shaped words outside backticks."""
    names = set()
    for span in _BACKTICKED.findall(text):
        head = re.split(r"[=(\s:]", span.strip(), maxsplit=1)[0].strip("'\"")
        if head:
            names.add(head.lower())
    for token in _SHAPED.findall(_BACKTICKED.sub(" ", text)):
        if token.lower() not in _NOT_CODE:
            names.add(token.lower())
    return names


def _plain_words(question: str) -> set[str]:
    """The question's words that stand on their own (not only as part of one of its code names)."""
    bare = _SHAPED.sub(" ", _BACKTICKED.sub(" ", question))
    return {w.lower() for w in _WORD.findall(bare)}


def _last_part(name: str) -> str:
    """A code name without its qualification, Sphinx's ``~`` and call brackets: ``get_task_logger`` of
    ``~celery.utils.log.get_task_logger()``."""
    return name.lstrip("~").removesuffix("()").rsplit(".", 1)[-1]


def new_code(text: str, question: str) -> set[str]:
    """The code names of ``text`` that the question does not hold (neither as a code name nor as a word, nor
    spelled out with its module: ``celery.utils.log.get_task_logger()`` is no new name when the question asks
    about ``get_task_logger``)."""
    asked_code = code_names(question)
    asked = asked_code | _plain_words(question)
    asked_whole = {name.lstrip("~").removesuffix("()") for name in asked_code}
    return {
        name
        for name in code_names(text)
        if name not in asked and name.lstrip(".") not in asked and _last_part(name) not in asked_whole
    }


_CONDITION = re.compile(r"\W*(?:if|when|whenever|unless|in case)\b", re.I)
_MAX_CONDITION = 300


def condition_clause(text: str) -> str:
    """The opening condition of ``text`` ("If used with `--quiet`, …" → "If used with `--quiet`"): up to the first
    comma, colon or semicolon outside brackets; "" when the sentence does not open with one (or it runs on)."""
    if not _CONDITION.match(text):
        return ""
    depth = 0
    for i, char in enumerate(text[:_MAX_CONDITION]):
        depth += char in "([{"
        depth -= char in ")]}" and depth > 0
        if char in ",:;" and depth == 0:
            return text[:i]
    return ""


def under_other_condition(text: str, question: str) -> bool:
    """Whether ``text`` states its fact under a condition naming code the question does not ("If used with
    `--quiet`, only error messages are shown" does not say what `--check` shows): the fact holds only there."""
    clause = condition_clause(text)
    return bool(clause) and bool(new_code(clause, question))
