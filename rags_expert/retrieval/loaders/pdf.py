"""PDF: one unit per page with text (pages numbered from 1), read by pypdf; with the ``pdf`` extra (pdfplumber),
each ruled table of a page is a unit of its own, one line per row with its column names, its caption (the
line above it) its section, and the page's text is the text outside its tables.

A table continued on the next page (word processors repeat no header row there) keeps the column names and
caption of where it began: a page's first table continues the previous page's last one when nothing but the
pages' running headers and footers (lines on both pages, page numbers) lies between them and both have as many
columns. A first row without a value in its first column is then the end of a row split by the page break,
joined to that row."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rags_expert.retrieval.loaders.base import LoadOptions, TextUnit, warn_over_limit
from rags_expert.retrieval.loaders.tables import table_text

CAPTION_GAP = 40.0
"""Points above a table within which a line of text is its caption."""


def has_table_extractor() -> bool:
    """Whether pdfplumber (the ``pdf`` extra) can be imported (a broken install counts as missing)."""
    from rags_expert.retrieval.loaders.registry import importable

    return importable("pdfplumber")


def load_pdf(path: Path, data: bytes, options: LoadOptions | None = None) -> list[TextUnit]:
    """PDF pages (and their tables when pdfplumber is installed); a parser failure is ``load_file``'s to report."""
    from pypdf import PdfReader

    options = options or LoadOptions()

    reader = PdfReader(io.BytesIO(data))
    title = str((reader.metadata.title if reader.metadata else None) or path.stem)
    texts = {number: (page.extract_text() or "").strip() for number, page in enumerate(reader.pages, start=1)}
    tables: dict[int, list[TextUnit]] = {}
    if has_table_extractor():  # after pypdf: a decompression bomb has been refused by then
        texts, tables = _with_tables(path, data, title, texts, options.pdf_max_table_crossings)
    units = []
    for number, text in texts.items():
        if text:
            units.append(TextUnit(text=text, title=title, page=number, key=f"p{number}"))
        units.extend(tables.get(number, []))
    return units


@dataclass
class _Table:
    """A table found on a page: its rows, the column names its rows are read with, and where it sits."""

    page: int
    index: int
    rows: list[list[str]]
    caption: str
    starts_page: bool
    """Nothing but running headers above it on its page."""
    ends_page: bool
    """Nothing but running footers below it on its page."""
    header: list[str] = field(default_factory=list)


def _with_tables(
    path: Path, data: bytes, title: str, texts: dict[int, str], max_crossings: int
) -> tuple[dict[int, str], dict[int, list[TextUnit]]]:
    """The pages' texts outside their tables, and the table units of each page with tables; a page whose ruled
    lines cross more than ``max_crossings`` times keeps its plain text (:func:`_crossings`), with a warning."""
    import pdfplumber

    found: list[_Table] = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        lines = [_lines(page.extract_text() or "") for page in pdf.pages]
        for number, page in enumerate(pdf.pages, start=1):
            if (crossings := _crossings(page)) > max_crossings:
                what = f"page {number}'s ruled lines cross {crossings:,} times, over the limit of {max_crossings:,}"
                warn_over_limit(path, what, "pdf_max_table_crossings", "its tables read as plain text")
                continue
            tables = page.find_tables()
            if not tables:
                continue
            furniture = _furniture(lines, number - 1)
            for index, table in enumerate(tables, start=1):
                rows = [[_cell(v) for v in row] for row in table.extract()]
                rows = [row for row in rows if any(row)]
                if rows:
                    caption = _caption(page, table)
                    found.append(
                        _Table(
                            page=number,
                            index=index,
                            rows=rows,
                            caption="" if _is_furniture(caption, furniture) else caption,
                            starts_page=index == 1 and _clear(page, (0.0, table.bbox[1]), furniture),
                            ends_page=index == len(tables) and _clear(page, (table.bbox[3], page.height), furniture),
                        )
                    )
            boxes = [t.bbox for t in tables]
            outside = page.filter(_outside(boxes))
            texts[number] = (outside.extract_text() or "").strip()
    _join_continued(found)
    units: dict[int, list[TextUnit]] = {}
    for item in found:
        text = table_text(item.rows, item.header or None)
        if text:
            unit = TextUnit(
                text=text, title=title, page=item.page, key=f"p{item.page}t{item.index}", section=item.caption
            )
            units.setdefault(item.page, []).append(unit)
    return texts, units


def _crossings(page: Any) -> int:
    """How many times a page's ruled lines may cross, as pdfplumber's table finder sees them (``TableFinder.get_edges``
    with the "lines" strategy: vertical and horizontal edges, joined and snapped, the short ones dropped): vertical lines times horizontal ones. The finder's work grows about as the cube of
    it; this count costs a sort of the page's edges."""
    from pdfplumber.table import TableSettings, merge_edges
    from pdfplumber.utils import filter_edges

    s = TableSettings.resolve(None)
    edges = [e for o in "vh" for e in filter_edges(page.edges, o, min_length=s.edge_min_length_prefilter)]
    edges = merge_edges(edges, s.snap_x_tolerance, s.snap_y_tolerance, s.join_x_tolerance, s.join_y_tolerance)
    vertical = sum(1 for edge in filter_edges(edges, "v", min_length=s.edge_min_length))
    return vertical * sum(1 for edge in filter_edges(edges, "h", min_length=s.edge_min_length))


def _join_continued(tables: list[_Table]) -> None:
    """Give each table continued from the previous page the header and caption of where it began; a split row's
    end (a first row with an empty first cell) joins the row it ends."""
    for before, table in zip(tables, tables[1:], strict=False):
        width = len(table.rows[0])
        if not (
            table.page == before.page + 1
            and before.ends_page
            and table.starts_page
            and width == len(before.rows[0])
            and (before.header or len(before.rows) > 1)
        ):
            continue
        table.header = before.header or before.rows[0]
        table.caption = before.caption
        if table.rows[0] == table.header:  # a repeated header row
            table.rows.pop(0)
        if table.rows and not table.rows[0][0] and len(before.rows) > (0 if before.header else 1):
            split = table.rows.pop(0)
            last = before.rows[-1]
            before.rows[-1] = [" ".join(p for p in (a, b) if p) for a, b in zip(last, split, strict=False)]
        if not before.header:
            before.header, before.rows = before.rows[0], before.rows[1:]


def _cell(value: object) -> str:
    """A cell's text on one line (``None``: empty)."""
    return " ".join(str(value or "").split())


def _lines(text: str) -> list[str]:
    """A text's non-blank lines, each with its whitespace collapsed."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


PAGE_NUMBER = re.compile(r"(?i)^\W*(?:page\s*)?\d+(?:\s*(?:of|/)\s*\d+)?\W*$")
"""A line that is a page number: ``12``, ``- 12 -``, ``Page 3 of 9``."""


def _furniture(lines: list[list[str]], at: int) -> set[str]:
    """Running headers and footers of page ``at`` (0-based): its first and last two lines that are also among
    the first or last two of the page before or after it."""

    def edges(page: list[str]) -> set[str]:
        return set(page[:2] + page[-2:])

    near = edges(lines[at - 1]) if at > 0 else set()
    if at + 1 < len(lines):
        near |= edges(lines[at + 1])
    return edges(lines[at]) & near


def _is_furniture(line: str, furniture: set[str]) -> bool:
    """Whether a line is a running header or footer, or a page number."""
    return line in furniture or bool(PAGE_NUMBER.match(line))


def _clear(page: Any, band: tuple[float, float], furniture: set[str]) -> bool:
    """Whether the page's text between two heights (from the top) holds nothing but running headers and footers."""
    top, bottom = band
    if bottom - top < 1:
        return True
    text = page.crop((0, top, page.width, bottom), strict=False).extract_text() or ""
    return all(_is_furniture(line, furniture) for line in _lines(text))


def _outside(boxes: list[tuple[float, float, float, float]]) -> Any:
    """A test of page objects: true for those outside every box."""

    def test(obj: dict[str, Any]) -> bool:
        return not any(_inside(obj, box) for box in boxes)

    return test


def _inside(obj: dict[str, Any], box: tuple[float, float, float, float]) -> bool:
    """Whether a page object's centre lies in a bounding box (x0, top, x1, bottom)."""
    if "x0" not in obj or "top" not in obj:
        return False
    x, y = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def _caption(page: Any, table: Any) -> str:
    """The last line of text within :data:`CAPTION_GAP` points above a table ('' if none)."""
    x0, top, x1, _ = table.bbox
    if top <= 0:
        return ""
    above = page.crop((0, max(0.0, top - CAPTION_GAP), page.width, top), strict=False).extract_text() or ""
    lines = [line.strip() for line in above.splitlines() if line.strip()]
    return lines[-1] if lines else ""
