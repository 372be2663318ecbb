"""Read files into text units: Markdown, plain text, HTML, PDF (one unit per page) and JSONL (one per line).

Files that cannot be ingested raise :class:`UnreadableFileError` naming the reason
(binary, not UTF-8, empty, symlink loop, dangling symlink, not a regular file, unreadable, malformed, a parser
failure); ingestion skips them with one warning each and goes on with the rest. Every message names its file
through :func:`shown_path`: control characters escaped, so a file name cannot forge a second log line.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rags_expert.limits import printable

SUPPORTED_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".jsonl"})
TEXT_KEYS = ("content", "text", "page_content", "body")


def shown_path(path: Path | str) -> str:
    """``path`` for a log line or a message, on one line: non-printable characters (a newline, an escape code)
    written as Python escapes (``\\n``, ``\\x1b``), never cut (:func:`rags_expert.limits.printable`)."""
    return printable(path, limit=None)


class UnreadableFileError(ValueError):
    """The file cannot be read as the kind of document its name says."""


class EmptyFileError(UnreadableFileError):
    """The file has no text to index (empty, whitespace only, or no text in any unit)."""


@dataclass
class TextUnit:
    """A piece of a file to chunk: its text, title, page (PDF) and extra metadata (JSONL)."""

    text: str
    title: str
    page: int | None = None
    key: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


def _decode(data: bytes, path: Path) -> str:
    """UTF-8 text, or an error for binary content (NUL bytes) and undecodable bytes."""
    if b"\x00" in data[:8192]:
        raise UnreadableFileError(f"{shown_path(path)}: binary content (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{shown_path(path)}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _markdown_title(text: str, path: Path) -> str:
    """The front matter's ``title:``, else the first heading outside code, else the file name without suffix
    (:func:`rags_expert.retrieval.chunking.markdown_title`)."""
    from rags_expert.retrieval.chunking import markdown_title  # the Markdown parser, loaded when needed

    return markdown_title(text) or path.stem


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, headings turned into Markdown headings so chunking respects them."""

    BLOCK = {"p", "div", "br", "li", "tr", "section", "article", "pre", "blockquote", "table", "ul", "ol"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.heading = ""
        """The text of the first heading element (the title when the page has no ``<title>``)."""
        self._skip = 0
        self._in_title = False
        self._in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Track skipped elements, titles, headings and block breaks."""
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
            self._in_heading = not self.heading.strip()
        elif tag in self.BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        """Close skipped elements, titles and headings."""
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag) or tag in self.BLOCK:
            self._in_heading = False
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        """Keep visible text."""
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)
            if self._in_heading:
                self.heading += data

    def text(self) -> str:
        """The collected text with whitespace tidied."""
        raw = "".join(self.parts)
        raw = re.sub(r"[ \t\r\f\v]+", " ", raw)
        return re.sub(r"\n\s*\n\s*", "\n\n", raw).strip()


def load_markdown(path: Path, data: bytes) -> list[TextUnit]:
    """Markdown or plain text: one unit."""
    text = _decode(data, path)
    return [TextUnit(text=text, title=_markdown_title(text, path))]


def load_html(path: Path, data: bytes) -> list[TextUnit]:
    """HTML: visible text; title: ``<title>``, else the first heading element, else the file name."""
    parser = _HTMLText()
    parser.feed(_decode(data, path))
    parser.close()
    title = " ".join(parser.title.split()) or " ".join(parser.heading.split()) or path.stem
    return [TextUnit(text=parser.text(), title=title)]


def load_pdf(path: Path, data: bytes) -> list[TextUnit]:
    """PDF: one unit per page with text (pages numbered from 1); a parser failure is :func:`load_file`'s to report."""
    import io

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    meta_title = (reader.metadata.title if reader.metadata else None) or path.stem
    units = []
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").strip()
        if text:
            units.append(TextUnit(text=text, title=str(meta_title), page=number, key=f"p{number}"))
    return units


def load_jsonl(path: Path, data: bytes) -> list[TextUnit]:
    """JSONL: one unit per object; text from content/text/page_content/body, other keys kept as metadata."""
    units = []
    for lineno, line in enumerate(_decode(data, path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: expected a JSON object per line")
        text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
        if text is None:
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: no text field (one of {', '.join(TEXT_KEYS)})")
        extra = {k: v for k, v in obj.items() if k not in TEXT_KEYS and k not in ("title", "page")}
        page = obj.get("page") if isinstance(obj.get("page"), int) else None
        units.append(
            TextUnit(
                text=text,
                title=str(obj.get("title") or f"{path.stem} #{lineno}"),
                page=page,
                key=f"L{lineno}",
                metadata=extra,
            )
        )
    return units


KINDS = {".html": "HTML", ".htm": "HTML", ".pdf": "PDF", ".jsonl": "JSONL"}
"""What a parser failure calls a file of this type (others: "text")."""

LOADERS = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".txt": load_markdown,
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
    ".jsonl": load_jsonl,
}


NOT_REGULAR = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def read_source(path: Path) -> bytes:
    """The bytes of a regular file to ingest; an :class:`UnreadableFileError` saying why it cannot be read.

    Anything else (a named pipe, a socket, a device, a directory) is refused before it is read: reading a pipe
    would wait for a writer forever. The file is opened without blocking and checked again once open.
    """
    try:
        kind = stat.S_IFMT(path.stat().st_mode)
        if kind == stat.S_IFREG:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            with open(fd, "rb") as file:
                kind = stat.S_IFMT(os.fstat(fd).st_mode)  # replaced between the two looks: refused too
                data = file.read() if kind == stat.S_IFREG else b""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            reason = "symlink loop"
        elif exc.errno == errno.ENOENT and path.is_symlink():
            reason = "dangling symlink (its target does not exist)"
        else:
            reason = f"unreadable ({exc.strerror or type(exc).__name__})"
        raise UnreadableFileError(f"{shown_path(path)}: {reason}") from exc
    if kind != stat.S_IFREG:
        what = NOT_REGULAR.get(kind, "not a regular file")
        raise UnreadableFileError(f"{shown_path(path)}: not a regular file ({what})")
    if not data.strip():
        raise EmptyFileError(f"{shown_path(path)}: empty file" + (" (whitespace only)" if data else ""))
    return data


def load_file(path: Path, data: bytes | None = None) -> list[TextUnit]:
    """The text units of one supported file.

    Any failure of the file's parser (pypdf's ``LimitReachedError`` on a decompression bomb, a recursion error
    on a self-referencing object or deeply nested JSON) is an :class:`UnreadableFileError` naming the error's
    type: one bad file never stops an ingestion.
    """
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise UnreadableFileError(f"{shown_path(path)}: unsupported file type {path.suffix!r}")
    data = read_source(path) if data is None else data
    try:
        return loader(path, data)
    except UnreadableFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a third-party parser on untrusted bytes may raise anything
        kind = KINDS.get(path.suffix.lower(), "text")
        raise UnreadableFileError(f"{shown_path(path)}: unreadable {kind} ({type(exc).__name__})") from exc


def iter_files(paths: list[Path], ignored: list[Path] | None = None) -> Iterator[Path]:
    """Files to ingest under the given files and folders (sorted; hidden entries skipped).

    A path named explicitly is always yielded (so that why it cannot be read is reported). Under a
    folder, files of a supported type are yielded, symlinks among them even when broken or looping;
    files of other types are appended to ``ignored``.
    """
    for root in paths:
        if not root.is_dir():
            yield root
            continue
        for p in sorted(root.rglob("*")):
            if any(x.startswith(".") for x in p.relative_to(root).parts) or p.is_dir():
                continue
            if p.suffix.lower() in SUPPORTED_SUFFIXES:
                yield p
            elif ignored is not None and (p.is_file() or p.is_symlink()):
                ignored.append(p)
