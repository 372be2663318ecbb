"""Word documents for the loader and CLI tests, built with python-docx (the ``docx`` extra)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any


def add_table(document: Any, rows: Sequence[Sequence[str]], *, bold_header: bool = False) -> Any:
    """A table of ``rows`` (each a row's cell texts) appended to ``document``; ``bold_header``: its first row bold,
    as Word marks a header row."""
    table = document.add_table(rows=len(rows), cols=max(len(r) for r in rows))
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=False):
            cell.text = value
    if bold_header:
        for cell in table.rows[0].cells:
            for run in cell.paragraphs[0].runs:
                run.bold = True
    return table


def saved(document: Any) -> bytes:
    """The document as a .docx file's bytes."""
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
