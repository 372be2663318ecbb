"""A question set of your own: JSONL (one object a line), YAML (a list of mappings) or CSV (a header row).

Each question::

    {"question": "...", "answer": "text" | ["text", ...] | null, "patterns": ["regex", ...],
     "sources": ["file or uid", ...], "kind": "answerable" | "unanswerable", "id": "...", "tags": ["...", ...]}

Only ``question`` is required. ``kind`` defaults to ``answerable`` when an ``answer`` or ``patterns`` are given,
else ``unanswerable``; ``id`` defaults to the question's text (what ``--compare`` matches two runs on). In CSV,
a list cell holds a JSON array (``["a", "b"]``) or one value. A malformed entry raises
:class:`QuestionSetError` naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("answerable", "unanswerable")
FIELDS = frozenset({"question", "answer", "patterns", "sources", "kind", "id", "tags"})


class QuestionSetError(ValueError):
    """A question set that cannot be read: its message is one line naming the file and the line."""


@dataclass(frozen=True)
class Question:
    """One question of a set, validated."""

    question: str
    id: str
    kind: str = "answerable"
    answers: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    tags: tuple[str, ...] = field(default_factory=tuple)
    line: int = 0


def load_question_set(path: Path) -> list[Question]:
    """The questions of ``path`` (by its suffix: ``.yaml``/``.yml``, ``.csv``, else JSONL), validated."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuestionSetError(f"{path}: no such question file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"{path}: cannot be read ({type(exc).__name__})") from None
    suffix = path.suffix.lower()
    rows = (
        _yaml_rows(path, text)
        if suffix in (".yaml", ".yml")
        else _csv_rows(path, text)
        if suffix == ".csv"
        else _jsonl_rows(path, text)
    )
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        q = to_question(row, line, where=f"{path} line {line}")
        if q.id in seen:
            raise QuestionSetError(f"{path} line {line}: id {q.id!r} repeats line {seen[q.id]}")
        seen[q.id] = line
        questions.append(q)
    if not questions:
        raise QuestionSetError(f"{path}: no questions")
    return questions


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) per non-blank line."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError as exc:
            raise QuestionSetError(f"{path} line {n}: not JSON ({_first_line(exc)})") from None


def _yaml_rows(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, mapping) per item of the YAML list (a top-level ``questions:`` key may hold it)."""
    import yaml

    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise QuestionSetError(f"{path}{where}: not YAML ({_first_line(exc)})") from None
    if isinstance(data, dict) and "questions" in data and isinstance(node, yaml.MappingNode):
        data = data["questions"]
        node = next(v for k, v in node.value if k.value == "questions")
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise QuestionSetError(f"{path}: a YAML question set is a list of questions")
    for item, item_node in zip(data, node.value):
        yield item_node.start_mark.line + 1, item


def _csv_rows(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, row) per CSV record; empty cells are left out, list cells read as JSON arrays.

    Read strictly: a quote that is never closed is an error naming the line it opened on, not a last cell that
    swallows the rest of the file."""
    reader = csv.DictReader(io.StringIO(text), strict=True)
    start = 1
    try:
        reader.fieldnames  # noqa: B018 - reads the header row
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            line = reader.line_num
            out: dict[str, Any] = {}
            for key, value in row.items():
                if key is None:
                    raise QuestionSetError(f"{path} line {line}: more cells than header columns")
                if value is None or value == "":
                    continue
                out[key.strip()] = _csv_cell(path, line, key.strip(), value)
            yield line, out
    except csv.Error as exc:
        lines = text.splitlines()
        while start <= len(lines) and not lines[start - 1].strip():  # the record begins after blank lines
            start += 1
        if "unexpected end of data" in str(exc):
            raise QuestionSetError(
                f'{path} line {start}: a quote opened on this line is never closed (an unbalanced "): close it, '
                'or write a quote inside a quoted cell as ""'
            ) from None
        raise QuestionSetError(f"{path} line {start}: not CSV ({exc})") from None


def _csv_cell(path: Path, line: int, key: str, value: str) -> Any:
    """A CSV cell: a JSON array for the list fields when it looks like one, else the text."""
    if key in ("patterns", "sources", "tags", "answer") and value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise QuestionSetError(f"{path} line {line}: {key} is not a JSON array ({_first_line(exc)})") from None
    if key in ("patterns", "sources", "tags"):
        return [value]
    return value


def to_question(row: Any, line: int = 0, *, where: str = "question") -> Question:
    """A validated :class:`Question` from one parsed entry; :class:`QuestionSetError` naming ``where``."""
    if not isinstance(row, dict):
        raise QuestionSetError(f"{where}: a question is an object with a 'question' field, not {type(row).__name__}")
    unknown = sorted(set(row) - FIELDS)
    if unknown:
        raise QuestionSetError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionSetError(f"{where}: 'question' must be a non-empty string")
    answers = _strings(row.get("answer"), "answer", where)
    patterns = _strings(row.get("patterns"), "patterns", where)
    for pattern in patterns:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise QuestionSetError(f"{where}: pattern {pattern!r} is not a regular expression ({exc})") from None
    kind = row.get("kind") or ("answerable" if answers or patterns else "unanswerable")
    if kind not in KINDS:
        raise QuestionSetError(f"{where}: kind must be answerable or unanswerable, not {kind!r}")
    if kind == "answerable" and not (answers or patterns):
        raise QuestionSetError(f"{where}: an answerable question needs an 'answer' or 'patterns'")
    if kind == "unanswerable" and (answers or patterns):
        raise QuestionSetError(f"{where}: an unanswerable question has no 'answer' or 'patterns'")
    ident = row.get("id", question.strip())
    if not isinstance(ident, (str, int)) or isinstance(ident, bool):
        raise QuestionSetError(f"{where}: 'id' must be a string or a number")
    return Question(
        question=question.strip(),
        id=str(ident),
        kind=kind,
        answers=answers,
        patterns=patterns,
        sources=_strings(row.get("sources"), "sources", where),
        tags=_strings(row.get("tags"), "tags", where),
        line=line,
    )


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    """A field that is a string, a list of strings, or absent/null, as a tuple of non-empty strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QuestionSetError(f"{where}: '{name}' must be a string or a list of strings")
    return tuple(v for v in value if v.strip())


def _first_line(exc: Exception) -> str:
    """An exception's message on one line."""
    return " ".join(str(exc).split())
