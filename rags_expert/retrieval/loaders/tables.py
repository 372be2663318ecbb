"""Tables as text a retriever and a model can read: one line per row, each value with its column's name.

``option: timeout; default: 15``: a row found alone (in a chunk, as evidence) still says what its values are.
Every table loader (Markdown, HTML, reStructuredText, Word, CSV/TSV, PDF) ends here. A table's caption (or
the heading it sits under) is its section: callers put it in a heading or a unit's section.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from rags_expert.retrieval.loaders.base import TextUnit, UnreadableFileError, decode, shown_path


def _cell(value: object) -> str:
    """A cell's text on one line (``None``: empty)."""
    return " ".join(str(value or "").split())


def row_line(header: Sequence[object], row: Sequence[object]) -> str:
    """One row as ``name: value; name: value`` (an empty value left out; a column without a name: its value)."""
    parts = []
    for index, value in enumerate(row):
        text = _cell(value)
        if not text:
            continue
        name = _cell(header[index]) if index < len(header) else ""
        parts.append(f"{name}: {text}" if name and name != text else text)
    return "; ".join(parts)


def label_line(row: Sequence[object]) -> str:
    """A row whose first cell names it (``Event ID Number | 34``) as ``Event ID Number: 34`` (more values: ``; ``)."""
    cells = [_cell(v) for v in row]
    values = "; ".join(v for v in cells[1:] if v)
    if not cells or not cells[0]:
        return values
    return f"{cells[0]}: {values}" if values else cells[0]


RECORD_FIELD_CHARS = 80
"""A record's field at most this long (label and value, ``Value: CFS DS Default: 4``) is short: it names the record
with its first row (:func:`record_lines`); a longer one (a description) is a line of its own."""
RECORD_NAME_CHARS = 320
"""The most characters of short fields that name a record; the short fields past it are lines of their own."""
RECORD_MAX_FIELDS = 10
"""A key-value table of more rows is a list of things (a glossary), not one record: each row is a line after the
first row alone."""


def record_lines(fields: Sequence[str]) -> list[str]:
    """The lines of a record (a key-value table's ``label: value`` rows, its first row naming it).

    The first row and the short fields (:data:`RECORD_FIELD_CHARS`, up to :data:`RECORD_NAME_CHARS` in all)
    name the record; each longer field is a line after that name. A parameter's description is then read with its
    value (``Configuration Parameter: DS_FILTERS_PER_PACKET; Value: CFS DS Default: 4; Description: This parameter
    sets the number of filters per packet entry …``): a question asked by what the parameter does finds the line
    that says what it does and also holds its value, which was a row of its own two rows away. A record of short
    fields only is one line. A longer table (:data:`RECORD_MAX_FIELDS`) names each row by its first row alone.
    """
    if len(fields) < 2:
        return list(fields)
    if len(fields) > RECORD_MAX_FIELDS:
        return [f"{fields[0]}; {field}" for field in fields[1:]]
    name, rest = fields[0], []
    for field in fields[1:]:
        if len(field) <= RECORD_FIELD_CHARS and len(name) + len(field) + 2 <= RECORD_NAME_CHARS:
            name = f"{name}; {field}"
        else:
            rest.append(field)
    return [name] if not rest else [f"{name}; {field}" for field in rest]


def table_lines(
    rows: Sequence[Sequence[object]], header: Sequence[object] | None = None, *, labelled: bool = False
) -> list[str]:
    """The lines of a table: ``header`` (else the first row) names the columns of every other row.

    ``labelled``: the table has no header row and its first column names each row, as a record or key-value table
    does (``Configuration Parameter | DS_DEST_FILE_CNT``, ``Value | 16``): each row reads ``label: value``, and
    :func:`record_lines` puts the record's name (its first row and short fields) on every line, so a row found
    alone still says whose value it is (``Configuration Parameter: DS_DEST_FILE_CNT; Value: 16; Description: …``).
    A table of one row (no header to name) is that row's values joined by ``; ``.
    """
    cleaned = [list(r) for r in rows if any(_cell(v) for v in r)]
    if labelled:
        return record_lines([line for line in (label_line(r) for r in cleaned) if line])
    if header is None:
        if len(cleaned) < 2:
            return ["; ".join(_cell(v) for v in r if _cell(v)) for r in cleaned]
        header, cleaned = cleaned[0], cleaned[1:]
    return [line for line in (row_line(header, r) for r in cleaned) if line]


def table_text(
    rows: Sequence[Sequence[object]], header: Sequence[object] | None = None, *, labelled: bool = False
) -> str:
    """A table's lines as one text block, rows on lines of their own (a Markdown line break does not join them)."""
    return "\n\n".join(table_lines(rows, header, labelled=labelled))


def load_csv(path: Path, data: bytes, delimiter: str = ",") -> list[TextUnit]:
    """CSV: the first row names the columns; the table's heading is the file's name.

    A cell may be as long as the whole file: the csv module's own limit (131,072 characters) skipped a valid file
    with one long cell as malformed. The file is in memory already, so its length is the bound; the limit is set
    back after reading it."""
    text = decode(data, path)
    limit = csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error as exc:
        raise UnreadableFileError(f"{shown_path(path)}: malformed {path.suffix[1:].upper()} ({exc})") from exc
    finally:
        csv.field_size_limit(limit)
    return [TextUnit(text=f"# {path.stem}\n\n{table_text(rows)}\n", title=path.stem)]


def load_tsv(path: Path, data: bytes) -> list[TextUnit]:
    """TSV: :func:`load_csv` with tabs between the values."""
    return load_csv(path, data, delimiter="\t")
