"""One reply's verdict against its question (docs/evaluation.md#scoring).

A reply is what ``rags-expert ask --json`` prints, with its exit code (0 answered, 1 an honest "not found", 2 an
error: :func:`rags_expert.outcomes.exit_code`). Its verdict:

* answerable, answered: **right** when the answer states the fact, **wrong** when it does not (a wrong answer
  given as a success), **unjudged** when the judge could not say;
* answerable, not found: **partial** when the not-found text still holds the fact (its partial findings), else
  **not_found**;
* unanswerable: **honest** when not found, **wrong** when answered;
* **error**: exit 2, a crash, unreadable output.

Whether a text states the fact: a question's ``patterns`` (case-insensitive regular expressions, any one) decide;
else its ``answer`` texts: the judge model (:mod:`rags_expert.evaluation.judge`) when there is one, else
containment (lower case, thousands separators dropped, spaces squeezed). Partial findings are read by patterns
or containment only. The answer is read without its ``[n]`` markers.

Beside the verdict: **cited** (the answer cites a source, and with patterns a cited source's text matches one:
the chunk states the fact), **cited_expected** (a cited source is one of the question's ``sources``: a file
path ending, or a chunk uid; None when the question names none), seconds, model calls and tokens.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rags_expert.evaluation.hotpotqa import strip_citations
from rags_expert.evaluation.questions import Question
from rags_expert.outcomes import exit_code

VERDICTS = ("right", "wrong", "partial", "not_found", "honest", "unjudged", "error")
"""Every verdict, in the order the table and the plot show them."""

JudgeFn = Callable[[str, str, str], Awaitable[bool | None]]
"""``(question, expected, answer) -> same fact?`` (None: could not say)."""


@dataclass
class Reply:
    """What the agent replied to one question: the exit code ``ask`` would give, the text, the metadata."""

    code: int
    answer: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""

    @classmethod
    def from_message(cls, content: Any, metadata: dict[str, Any], seconds: float) -> Reply:
        """The reply of a final message (``ask --json``'s ``answer`` and the rest of its fields)."""
        return cls(exit_code(metadata), str(content or ""), dict(metadata), seconds)


@dataclass
class Result:
    """One question's verdict and what it was read from (a row of ``report.json``)."""

    id: str
    question: str
    kind: str
    tags: list[str]
    verdict: str
    code: int
    answer: str
    answer_kind: str
    cited: bool
    cited_expected: bool | None
    judged_by: str
    seconds: float
    llm_calls: int
    tokens: int
    reason: str = ""
    error: str = ""
    sources: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)


def normalise(text: str) -> str:
    """Lower case, thousands separators dropped (``1,412`` -> ``1412``), spaces squeezed."""
    return " ".join(re.sub(r"(?<=\d),(?=\d{3})", "", text.lower()).split())


def matches(patterns: tuple[str, ...] | list[str], text: str) -> bool:
    """Whether any of the (case-insensitive) patterns occurs in ``text``."""
    return any(re.search(p, text or "", re.IGNORECASE) for p in patterns)


def contains(answers: tuple[str, ...], text: str) -> bool:
    """Whether any normalised answer text occurs in the normalised ``text``."""
    got = normalise(text)
    return any(normalise(a) and normalise(a) in got for a in answers)


def plain_fact(q: Question, text: str) -> bool:
    """Whether ``text`` states the fact, by patterns or, without them, containment."""
    return matches(q.patterns, text) if q.patterns else contains(q.answers, text)


async def states_fact(q: Question, text: str, judge: JudgeFn | None) -> tuple[bool | None, str]:
    """Whether the answer ``text`` states the fact, and how that was decided (``patterns``, ``judge``, ``contains``)."""
    if q.patterns:
        return matches(q.patterns, text), "patterns"
    if judge is not None:
        return await judge(q.question, " | ".join(q.answers), text), "judge"
    return contains(q.answers, text), "contains"


def expected_cited(q: Question, sources: list[dict[str, Any]]) -> bool | None:
    """Whether a cited source is one of the question's ``sources`` (path ending or uid); None when it names none."""
    if not q.sources:
        return None
    for s in sources:
        where = str(s.get("source") or "")
        uid = str(s.get("uid") or "")
        for expected in q.sources:
            if uid == expected or where == expected or where.endswith("/" + expected.lstrip("/")):
                return True
    return False


def needs_fact_check(q: Question, reply: Reply) -> bool:
    """Whether the verdict turns on whether the answer states the fact: an answerable question answered."""
    return q.kind == "answerable" and reply.code == 0 and not reply.error


async def score(q: Question, reply: Reply, judge: JudgeFn | None = None) -> Result:
    """The verdict of ``reply`` to ``q`` (see the module docstring), asking ``judge`` where it decides."""
    stated: tuple[bool | None, str] = (None, "")
    if needs_fact_check(q, reply):
        stated = await states_fact(q, strip_citations(reply.answer), judge)
    return result_of(q, reply, stated)


def score_plain(q: Question, reply: Reply) -> Result:
    """The verdict of ``reply`` to ``q`` without a judge: patterns, else containment."""
    text = strip_citations(reply.answer)
    stated = (
        (plain_fact(q, text), "patterns" if q.patterns else "contains") if needs_fact_check(q, reply) else (None, "")
    )
    return result_of(q, reply, stated)


def result_of(q: Question, reply: Reply, stated: tuple[bool | None, str]) -> Result:
    """The :class:`Result` of ``reply``, given whether its answer states the fact and how that was decided
    (read only for an answerable question answered)."""
    meta = reply.metadata
    sources = [s for s in meta.get("sources") or [] if isinstance(s, dict)]
    text = strip_citations(reply.answer)
    judged_by = "patterns" if q.patterns else ""
    if reply.code not in (0, 1) or reply.error:
        verdict = "error"
    elif q.kind == "unanswerable":
        verdict = "honest" if reply.code == 1 else "wrong"
    elif reply.code == 1:
        verdict = "partial" if plain_fact(q, text) else "not_found"
    else:
        judged_by = stated[1]
        verdict = "unjudged" if stated[0] is None else "right" if stated[0] else "wrong"
    cited = bool(sources) and (not q.patterns or any(matches(q.patterns, str(s.get("content") or "")) for s in sources))
    usage = meta.get("usage") or {}
    return Result(
        id=q.id,
        question=q.question,
        kind=q.kind,
        tags=list(q.tags),
        verdict=verdict,
        code=reply.code,
        answer=reply.answer,
        answer_kind=str(meta.get("answer_kind") or ""),
        cited=cited,
        cited_expected=expected_cited(q, sources),
        judged_by=judged_by,
        seconds=round(reply.seconds, 3),
        llm_calls=int(meta.get("llm_calls") or 0),
        tokens=int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0),
        reason=str(meta.get("reason") or ""),
        error=reply.error or str(meta.get("error") or ""),
        sources=[
            {k: s.get(k) for k in ("n", "uid", "title", "source", "page", "content") if s.get(k) is not None}
            for s in sources
        ],
        citations=[c for c in meta.get("citations") or [] if isinstance(c, dict)],
    )


def right_cited(r: Result) -> bool:
    """Right and cited: the headline of an answerable question."""
    return r.verdict == "right" and r.cited
