"""Word documents (``.docx``, ``docx`` extra): read by python-docx, in body order, written out as Markdown.

Headings (styles "Title", "Heading 1" … "Heading 9") become Markdown headings; list paragraphs (a "List …"
style or numbering) ``- `` items; other paragraphs their text; each table a line per row with its column names
(the first row; a two-column table without a header row: each row's label), a "Caption" paragraph before it a heading
one level below the section it is in.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from rags_expert.retrieval.loaders.base import TextUnit
from rags_expert.retrieval.loaders.tables import table_text


def _level(paragraph: Any) -> int:
    """A paragraph's heading level (0: not a heading): "Title" is 1, "Heading N" is N."""
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name == "Title":
        return 1
    found = re.fullmatch(r"Heading (\d)", name)
    return int(found.group(1)) if found else 0


def _is_list(paragraph: Any) -> bool:
    """Whether a paragraph is a list item: a "List …" style, or numbering of its own."""
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    p_pr = paragraph._p.pPr
    return name.startswith("List") or (p_pr is not None and p_pr.numPr is not None)


def _rows(table: Any) -> list[list[str]]:
    """A table's rows of cell texts; a merged cell's text once (python-docx repeats it in each grid cell)."""
    rows = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(" ".join(cell.text.split()))
        rows.append(cells)
    return rows


def _has_header_row(table: Any) -> bool:
    """Whether a table's first row is its header: marked as the header row that repeats on each page, or all
    bold."""
    from docx.oxml.ns import qn

    rows = list(table.rows)
    if not rows:
        return False
    if any(r._tr.trPr is not None and r._tr.trPr.find(qn("w:tblHeader")) is not None for r in rows):
        return True
    runs = [run for cell in rows[0].cells for p in cell.paragraphs for run in p.runs if run.text.strip()]
    return bool(runs) and all(run.bold for run in runs)


def _table(table: Any) -> str:
    """A table's row lines: with its header row's column names; a two-column table without a header row is a
    record or key-value table (``Command Name | Set Max File Size``), its first column naming each row."""
    rows = _rows(table)
    two_columns = sum(len(r) == 2 for r in rows) > len(rows) / 2
    return table_text(rows, labelled=two_columns and not _has_header_row(table))


def load_docx(path: Path, data: bytes) -> list[TextUnit]:
    """A Word document: one unit of Markdown; title: the core properties' title, else the first heading."""
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    lines: list[str] = []
    depth, heading, first_heading, caption = 0, "", "", ""
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            lines += [f"{'#' * min(6, depth + 1)} {caption}", ""] if caption else []
            lines += [_table(block), ""]
            if caption and heading:  # what follows the table is the section's again
                lines += [f"{'#' * min(6, depth)} {heading}", ""]
            caption = ""
            continue
        text = " ".join(block.text.split())
        if not text:
            continue
        if (block.style is not None and block.style.name == "Caption") and not caption:
            caption = text
            continue
        if caption:
            lines += [caption, ""]
            caption = ""
        if level := _level(block):
            depth, heading = level, text
            first_heading = first_heading or text
            lines += [f"{'#' * min(6, level)} {text}", ""]
        elif _is_list(block):
            lines.append(f"- {text}")
        else:
            lines += [text, ""]
    if caption:
        lines.append(caption)
    title = (document.core_properties.title or "").strip() or first_heading or path.stem
    return [TextUnit(text="\n".join(lines).strip(), title=title)]
