"""PDF: one unit per page with text (pages numbered from 1), read by pypdf; with the ``pdf`` extra (pdfplumber),
each ruled table of a page is a unit of its own, one line per row with its column names, its caption (the
line above it) its section, and the page's text is the text outside its tables."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rags_expert.retrieval.loaders.base import TextUnit
from rags_expert.retrieval.loaders.tables import table_text

CAPTION_GAP = 40.0
"""Points above a table within which a line of text is its caption."""


def has_table_extractor() -> bool:
    """Whether pdfplumber (the ``pdf`` extra) can be imported (a broken install counts as missing)."""
    from rags_expert.retrieval.loaders.registry import importable

    return importable("pdfplumber")


def load_pdf(path: Path, data: bytes) -> list[TextUnit]:
    """PDF pages (and their tables when pdfplumber is installed); a parser failure is ``load_file``'s to report."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    title = str((reader.metadata.title if reader.metadata else None) or path.stem)
    texts = {number: (page.extract_text() or "").strip() for number, page in enumerate(reader.pages, start=1)}
    tables: dict[int, list[TextUnit]] = {}
    if has_table_extractor():  # after pypdf: a decompression bomb has been refused by then
        texts, tables = _with_tables(data, title, texts)
    units = []
    for number, text in texts.items():
        if text:
            units.append(TextUnit(text=text, title=title, page=number, key=f"p{number}"))
        units.extend(tables.get(number, []))
    return units


def _with_tables(data: bytes, title: str, texts: dict[int, str]) -> tuple[dict[int, str], dict[int, list[TextUnit]]]:
    """The pages' texts outside their tables, and the table units of each page with tables."""
    import pdfplumber

    tables: dict[int, list[TextUnit]] = {}
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
            found = page.find_tables()
            if not found:
                continue
            units = []
            for index, table in enumerate(found, start=1):
                text = table_text(table.extract())
                if text:
                    units.append(
                        TextUnit(
                            text=text, title=title, page=number, key=f"p{number}t{index}", section=_caption(page, table)
                        )
                    )
            if units:
                boxes = [t.bbox for t in found]
                outside = page.filter(_outside(boxes))
                texts[number] = (outside.extract_text() or "").strip()
                tables[number] = units
    return texts, tables


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
