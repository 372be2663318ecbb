"""Tolerant parsing of model replies into structured values.

Weak and local models answer structured requests in many shapes: a proper tool
call, JSON inside a code fence, ``"Yes."``, ``"NO"``, ``"score: 8/10"``, or a
verdict buried in prose. These functions never raise: they return ``None`` when
nothing usable is found, and the caller applies its documented default.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*+(.*?)```", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9']+")
_FIELD_LABEL = re.compile(
    r"^[\s*_`#>\"'{]*(?:relevant|grounded|useful|supported|binary_score|verdict|answer)[\"'*]*\s*[:=]\s*", re.I
)


def _outside_strings(text: str) -> Iterator[tuple[int, str]]:
    """``(index, char)`` of every character outside JSON strings.

    Quotes open a string only inside brackets: prose around JSON may hold stray quotes.
    """
    depth, in_str, esc = 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]" and depth > 0:
            depth -= 1
        yield i, ch


def _balanced_objects(text: str) -> list[str]:
    """Top-level ``{...}`` substrings, respecting strings and nesting."""
    out, depth, start = [], 0, -1
    for i, ch in _outside_strings(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[start : i + 1])
    return out


def extract_json_object(text: Any) -> dict[str, Any] | None:
    """The first JSON object in ``text``: the text itself, a fenced block, embedded in prose, or cut off
    at the token cap (closed: ``{"relevant": false`` reads as ``{"relevant": false}``)."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text.strip():
        return None
    fenced = [m.strip() for m in _FENCE.findall(text)]
    objects = _balanced_objects(text)
    candidates = [text.strip(), *fenced, *objects]
    for cand in candidates:
        try:
            value = json.loads(cand)
        except (ValueError, TypeError):
            continue
        if isinstance(value, dict):
            return value
    truncated = [text.strip()] if text.strip().startswith("{") and not objects else []
    return _repaired_object([*fenced, *objects, *truncated])


REPAIR_MAX_CHARS = 50_000
"""Longest candidate given to :mod:`json_repair` (pure Python, about 70 µs a character on deeply nested text): a
reply cut off at its token cap is far shorter (``grading.max_tokens`` 256, ``kg.max_tokens``)."""


def _repaired_object(candidates: list[str]) -> dict[str, Any] | None:
    """The first candidate :mod:`json_repair` turns into an object: single quotes, trailing commas,
    or a reply cut off at the token cap (``{"relevant": false`` reads as ``{"relevant": false}``).

    Only JSON-shaped candidates are repaired (fenced blocks, balanced ``{...}``, a reply that starts
    with ``{``): repairing free prose would invent objects out of words.
    """
    import json_repair  # here, not at the top: only a malformed reply needs it (~20 ms a process, issue 54)

    for cand in candidates:
        if len(cand) > REPAIR_MAX_CHARS:
            continue
        try:
            value = json_repair.loads(cand)
        except (ValueError, RecursionError):  # never raise: the caller applies its default
            continue
        if isinstance(value, dict):
            return value
    return None


def coerce_bool(value: Any) -> bool | None:
    """A yes/no value from a bool, number or word; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value) if value in (0, 1) else None
    if isinstance(value, str):
        return parse_yes_no(value)
    return None


_VERDICT_KEYS = ("binary_score", "score", "relevant", "grounded", "useful", "verdict", "answer", "value")
_YES = {"yes", "y", "yep", "yeah", "true", "relevant", "grounded", "useful", "supported", "correct", "pass"}
_NO = {"no", "n", "nope", "nah", "false", "irrelevant", "ungrounded", "unsupported", "useless", "incorrect", "fail"}
_ADJ = r"(?:relevant|grounded|useful|supported|helpful|pertinent)"
_NEG_ADJ = r"(?:irrelevant|ungrounded|unsupported|useless|unhelpful|unrelated)"
# a negation up to four words before the adjective, in the same clause: "not really useful",
# "doesn't seem to be relevant", "nothing in the chunk is relevant"
_NEGATED = re.compile(
    r"(?:\bnot|n't|\bcannot|\bnever|\bno(?!\s+doubt)|\bnothing|\bnone|\bneither|\bnor|\bwithout)"
    rf"\s+(?:[\w'-]+\s+){{0,4}}{_ADJ}\b",
    re.I,
)
_VERDICT_NO = re.compile(rf"\b{_NEG_ADJ}\b", re.I)
_VERDICT_YES = re.compile(rf"\b{_ADJ}\b", re.I)
# a yes/no word standing alone (followed by punctuation or the end), not "no moat" or "true that"
_ALONE_YES = re.compile(r"\b(?:yes|yep|yeah|true)\b(?=\s*(?:[^\w\s]|$))", re.I)
_ALONE_NO = re.compile(r"\b(?:no|nope|nah|false|not(?:\s+at\s+all)?)\b(?=\s*(?:[^\w\s]|$))", re.I)
# Uncertain, hedged, partial or conditional replies: no verdict can be read from them.
_HEDGE = re.compile(
    r"\b(?:"
    r"(?:can\s*not|can't|cannot|could\s*not|couldn't|unable\s+to|not\s+able\s+to)\s+"
    r"(?:determine|tell|say|decide|judge|assess|verify|confirm|know|be\s+(?:sure|certain))"
    r"|(?:hard|difficult|impossible)\s+to\s+(?:say|tell|determine|judge|decide)"
    r"|not\s+(?:sure|certain|clear|fully|entirely|completely|totally|wholly|quite|necessarily|always)"
    r"|unsure|uncertain|unclear|ambiguous|inconclusive|undetermined|indeterminate|undecided|debatable|questionable"
    r"|maybe|perhaps|possibly|probably|likely|unlikely|arguably|presumably"
    r"|partial|partially|partly|in\s+part|to\s+(?:some|a\s+certain)\s+(?:extent|degree)|somewhat|more\s+or\s+less"
    r"|hardly|barely|scarcely|marginally|tangentially|borderline"
    r"|it\s+depends|depends\s+on|unless"
    r"|(?:don't|do\s+not)\s+know|no\s+idea|yes\s+and\s+no|yes\s+or\s+no|n/a"
    rf"|(?:mostly|largely|mainly|fairly|semi|half|sort\s+of|kind\s+of)[\s-]+(?:yes|no|{_ADJ}|{_NEG_ADJ})"
    r"|(?:may|might|could)\s+(?:be|or\s+may\s+not|not)"
    rf"|not\s+(?:\w+ly\s+)?{_NEG_ADJ}"
    r")\b",
    re.I,
)
_JSON_KEY = re.compile(r"[\"']\w+[\"']\s*:")
# a sentence ending in "?", tried from sentence starts only (from every character it was quadratic)
_QUESTION = re.compile(r"(?:(?<=[.!?\n])|\A)[^.!?\n]*+\?")


def _json_verdict(obj: dict[str, Any]) -> bool | None | str:
    """The verdict of a JSON reply: the first readable verdict field; None when verdict fields are
    there but none is readable (``{"relevant": "maybe"}``); ``"absent"`` when the object holds no
    verdict at all (the text around it may still say one)."""
    present = [key for key in _VERDICT_KEYS if key in obj]
    for key in present:
        if (v := coerce_bool(obj[key])) is not None:
            return v
    if present:
        return None
    for v in obj.values():
        if (b := coerce_bool(v)) is not None and not isinstance(v, (int, float)):
            return b
    return "absent"


def _leading_verdict(text: str) -> bool | None:
    """The verdict a reply opens with (``"Yes, ..."``, ``"relevant: no"``, ``"**No**"``), if any."""
    # A leading field name with a separator ("relevant: no", '{"relevant": false' cut short) is a
    # label, not the verdict: drop it so the value after it decides.
    stripped = _FIELD_LABEL.sub("", text.strip(), count=1)
    stripped = re.sub(
        r"^[\s*_`#>\"']*(?:answer|verdict|grade|score|binary_score|result)?\s*[:=-]?\s*", "", stripped, flags=re.I
    )
    if stripped.startswith("{"):  # the leading word of JSON is a key ("relevant"), not a verdict
        return None
    words = _WORD.findall(stripped.lower())
    if words and words[0] in _YES:
        return True
    if words and words[0] in _NO:
        return False
    return None


def _signals(prose: str) -> tuple[bool, bool]:
    """Whether ``prose`` says yes somewhere, and whether it says no somewhere."""
    negated = _NEGATED.search(prose) is not None
    rest = _NEGATED.sub(" ", prose)
    says_no = negated or bool(_VERDICT_NO.search(rest) or _ALONE_NO.search(rest))
    says_yes = bool(_VERDICT_YES.search(rest) or _ALONE_YES.search(rest))
    return says_yes, says_no


def parse_yes_no(text: Any) -> bool | None:
    """A binary verdict from free text, or None when none can be read.

    A JSON verdict field decides; otherwise the prose must say one thing: the leading word
    (``"Yes, ..."``, ``"No."``, ``"Relevant."``), a standalone yes/no, a verdict adjective
    (``"The chunk is relevant."``) or its negation (``"It is not really useful."``). A reply
    that hedges (``"maybe"``, ``"I cannot determine whether ..."``, ``"partially"``, ``"hardly
    grounded"``, ``"it depends"``) or says both yes and no reads as None, and the caller
    applies its documented default. A reply opening with "yes" that also says no anywhere is
    unreadable; one opening with "no" is only contradicted by a standalone "yes" (its
    explanation may name what would have been relevant).
    """
    if not isinstance(text, str) or not text.strip():
        return None
    obj = extract_json_object(text)
    if obj and (verdict := _json_verdict(obj)) != "absent":
        return verdict  # type: ignore[return-value]
    # a JSON key ('{"relevant":' cut short) names the field, and a question ("Is it relevant?") asks:
    # neither is a verdict
    prose = _QUESTION.sub(" ", _JSON_KEY.sub(" ", text))
    if _HEDGE.search(prose):
        return None
    lead = _leading_verdict(text)
    says_yes, says_no = _signals(prose)
    if lead is True:
        return None if says_no else True
    if lead is False:
        return None if _ALONE_YES.search(prose) else False
    if says_yes != says_no:
        return says_yes
    return None


# Possessive quantifiers (giving back a space or a digit can never help the next token) and numbers tried from
# their first digit only: the backtracking forms took seconds on a thousand spaces after "score".
_SCORE_PATTERNS = [
    re.compile(r"score\s*+(?:is|of|=|:)?\s*+\**+\s*+(-?\d++(?:\.\d+)?)\s*+(?:/|out of)\s*+(\d+(?:\.\d+)?)", re.I),
    re.compile(r"(?<!\d)(-?\d++(?:\.\d+)?)\s*+(?:/|out of)\s*+(\d+(?:\.\d+)?)", re.I),
    re.compile(r"score\s*+(?:is|of|=|:)?\s*+\**+\s*+(-?\d+(?:\.\d+)?)", re.I),
    re.compile(r"^\s*+\**+\s*+(-?\d+(?:\.\d+)?)\b"),
]


def parse_score(text: Any, lo: float = 0.0, hi: float = 10.0) -> float | None:
    """A score in [lo, hi] from JSON (``{"score": 8}``), ``score: 8/10``, ``8 out of 10`` or a leading number.

    Fractions over another scale are rescaled (``4/5`` → 8.0 on 0–10); values are clamped.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return min(max(float(text), lo), hi)
    if not isinstance(text, str) or not text.strip():
        return None
    obj = extract_json_object(text)
    if obj:
        for key in ("score", "rating", "value", "grade"):
            if key in obj:
                val = obj[key]
                if isinstance(val, (int, float)) and not isinstance(val, bool):
                    return min(max(float(val), lo), hi)
                if isinstance(val, str) and (s := parse_score(val, lo, hi)) is not None:
                    return s
    for pattern in _SCORE_PATTERNS:
        m = pattern.search(text)
        if not m:
            continue
        value = float(m.group(1))
        if m.lastindex and m.lastindex >= 2:
            scale = float(m.group(2))
            if scale <= 0:
                continue
            value = lo + (hi - lo) * value / scale
        return min(max(value, lo), hi)
    return None


def parse_model(schema: type[M], payload: Any) -> M | None:
    """Validate a dict / JSON text / prose-embedded JSON against a pydantic schema; None if impossible."""
    obj = payload if isinstance(payload, dict) else extract_json_object(payload)
    if obj is None:
        return None
    try:
        return schema.model_validate(obj)
    except ValidationError:
        return None


# possessive: three adjacent whitespace runs made a line of spaces cubic
_LEADS = re.compile(
    r"^[*_#>`\"'\s]*+(?:here is (?:the|a) )?(?:rephrased|rewritten|improved|standalone|new)?\s*+"
    r"(?:question|query|search query)?\s*+[:\-]\s*",
    re.I,
)


def parse_free_text_field(text: Any, field: str) -> str | None:
    """A single string field: from JSON ``{field: ...}``, else the first meaningful line without labels/quotes."""
    if not isinstance(text, str) or not text.strip():
        return None
    obj = extract_json_object(text)
    if obj and isinstance(obj.get(field), str) and obj[field].strip():
        return obj[field].strip()
    body = _FENCE.sub(lambda m: m.group(1), text)
    for line in body.splitlines():
        line = _LEADS.sub("", line).strip().strip("*`\"' ")
        if len(line) >= 3 and not line.endswith(":") and not line.startswith("{"):
            return line
    return None


_ANY_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\n?(.*?)```", re.DOTALL)  # possessive: linear


def extract_code_block(text: Any, languages: tuple[str, ...] = ()) -> str | None:
    """The body of the first fenced code block in ``text`` (```lang ... ```), or None.

    With ``languages``, a block tagged with one of them (case-insensitive) is
    preferred; an untagged block is the fallback. An unclosed final fence still counts.
    """
    if not isinstance(text, str) or "```" not in text:
        return None
    blocks = [(m.group(1).lower(), m.group(2).strip()) for m in _ANY_FENCE.finditer(text)]
    if not blocks:
        tail = text.split("```", 1)[1]
        lang, _, body = tail.partition("\n")
        blocks = [(lang.strip().lower(), body.strip())] if body.strip() else []
    wanted = {lang.lower() for lang in languages}
    for lang, body in blocks:
        if body and (not wanted or lang in wanted):
            return body
    for lang, body in blocks:
        if body and not lang:
            return body
    return None


INLINE_CHARS = 4096
"""Replies up to this many characters are read on the event loop: a worker-thread hop costs more client CPU
than reading them (bench/speed_cost.py); longer ones, up to ``llm.max_reply_chars``, are read in a thread so
a host keeps answering its other requests meanwhile."""

R = TypeVar("R")


async def read_off_loop(size: int, fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)``, in a worker thread when the text it reads (``size`` characters) is long, else at once."""
    if size <= INLINE_CHARS:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)
