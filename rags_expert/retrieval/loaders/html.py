"""HTML: the visible text of a page, headings turned into Markdown headings so chunking respects them, and each
table one line per row with its column names (its caption a heading one level below the section it is in)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from rags_expert.retrieval.loaders.base import TextUnit, decode
from rags_expert.retrieval.loaders.tables import table_text

SKIPPED = ("script", "style", "noscript", "template")


@dataclass
class _Table:
    """A table being read: its rows of cells, which rows are headers, and its caption."""

    rows: list[list[str]] = field(default_factory=list)
    header: list[str] | None = None
    caption: str = ""
    in_head: bool = False
    row_is_header: bool = True
    labels: list[bool] = field(default_factory=list)
    """Per row, whether its first cell is a ``th`` (a record table's label: ``<th>Port</th><td>8080</td>``)."""


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, headings turned into Markdown headings so chunking respects them."""

    BLOCK = {"p", "div", "br", "li", "section", "article", "pre", "blockquote", "ul", "ol", "dd", "dt"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.heading = ""
        """The text of the first heading element (the title when the page has no ``<title>``)."""
        self.level = 0
        """The level of the last heading (a table caption goes one below it)."""
        self.last_heading: list[str] = []
        """The text of the last heading (re-opened after a captioned table: what follows is its section again)."""
        self._skip = 0
        self._in_title = False
        self._in_heading = False
        self._tables: list[_Table] = []
        self._cell: list[str] | None = None
        self._in_caption = False
        self._heading_open = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Track skipped elements, titles, headings, tables and block breaks."""
        if tag in SKIPPED:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif self._tables and self._table_start(tag):
            return
        elif tag == "table":
            self._tables.append(_Table())
        elif re.fullmatch(r"h[1-6]", tag):
            self.level = int(tag[1])
            self.parts.append("\n\n" + "#" * self.level + " ")
            self._in_heading = not self.heading.strip()
            self.last_heading = []
            self._heading_open = True
        elif tag in self.BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def _table_start(self, tag: str) -> bool:
        """Handle a tag inside a table (True when it was a table's own tag)."""
        table = self._tables[-1]
        if tag == "thead":
            table.in_head = True
        elif tag == "tr":
            table.rows.append([])
            table.row_is_header = True
        elif tag in ("td", "th"):
            self._cell = []
            table.row_is_header &= tag == "th" or table.in_head
            if table.rows and not table.rows[-1]:
                table.labels.append(tag == "th")
        elif tag == "caption":
            self._in_caption = True
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")
        else:
            return tag != "table"
        return True

    def handle_endtag(self, tag: str) -> None:
        """Close skipped elements, titles, headings, cells and tables."""
        if tag in SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif self._tables and tag in ("td", "th", "thead", "caption", "tr", "table"):
            self._table_end(tag)
        elif re.fullmatch(r"h[1-6]", tag) or tag in self.BLOCK:
            self._in_heading = False
            self._heading_open = self._heading_open and not re.fullmatch(r"h[1-6]", tag)
            self.parts.append("\n\n")

    def _table_end(self, tag: str) -> None:
        """Close a cell, a header, a caption, a row or a whole table (written out as row lines)."""
        table = self._tables[-1]
        if tag in ("td", "th") and self._cell is not None:
            if table.rows:
                table.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "thead":
            table.in_head = False
        elif tag == "caption":
            self._in_caption = False
        elif tag == "tr" and table.rows and table.row_is_header and table.header is None and len(table.rows) == 1:
            table.header = table.rows.pop()
        elif tag == "table":
            self._tables.pop()
            caption = " ".join(table.caption.split())
            heading = f"\n\n{'#' * min(6, self.level + 1)} {caption}\n\n" if caption else "\n\n"
            section = " ".join("".join(self.last_heading).split())
            again = f"{'#' * self.level} {section}\n\n" if caption and self.level and section else ""
            labelled = table.header is None and len(table.labels) == len(table.rows) and all(table.labels)
            labelled &= any(len(r) > 1 for r in table.rows)
            self.parts.append(heading + table_text(table.rows, table.header, labelled=labelled) + "\n\n" + again)

    def handle_data(self, data: str) -> None:
        """Keep visible text (in a table: in its cell or caption)."""
        if self._in_title:
            self.title += data
        elif self._skip:
            return
        elif self._tables and self._in_caption:
            self._tables[-1].caption += data
        elif self._tables and self._cell is not None:
            self._cell.append(data)
        elif not self._tables:
            self.parts.append(data)
            if self._in_heading:
                self.heading += data
            if self._heading_open:
                self.last_heading.append(data)

    def text(self) -> str:
        """The collected text with whitespace tidied."""
        raw = "".join(self.parts)
        raw = re.sub(r"[ \t\r\f\v]+", " ", raw)
        return re.sub(r"\n\s*\n\s*", "\n\n", raw).strip()


def load_html(path: Path, data: bytes) -> list[TextUnit]:
    """HTML: visible text; title: ``<title>``, else the first heading element, else the file name."""
    parser = _HTMLText()
    parser.feed(decode(data, path))
    parser.close()
    title = " ".join(parser.title.split()) or " ".join(parser.heading.split()) or path.stem
    return [TextUnit(text=parser.text(), title=title)]
