"""What every loader shares: the text unit, the errors, and reading a file's bytes safely.

Files that cannot be ingested raise :class:`UnreadableFileError` naming the reason (binary, not UTF-8, empty,
symlink loop, dangling symlink, not a regular file, unreadable, malformed, a parser failure); ingestion skips
them with one warning each and goes on with the rest. Every message names its file through :func:`shown_path`:
control characters escaped, so a file name cannot forge a second log line.
"""

from __future__ import annotations

import codecs
import errno
import io
import logging
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rags_expert.limits import printable, setting_hint

log = logging.getLogger("rags_expert.retrieval.ingest")
"""The ingestion's logger: a loader's warning reads as the ingestion's other lines."""
MIB = 2**20


def shown_path(path: Path | str) -> str:
    """``path`` for a log line or a message, on one line: non-printable characters (a newline, an escape code)
    written as Python escapes (``\\n``, ``\\x1b``), never cut (:func:`rags_expert.limits.printable`)."""
    return printable(path, limit=None)


class UnreadableFileError(ValueError):
    """The file cannot be read as the kind of document its name says."""


class EmptyFileError(UnreadableFileError):
    """The file has no text to index (empty, whitespace only, or no text in any unit)."""


class MissingExtraError(UnreadableFileError):
    """The file's format needs an optional extra that is not installed (``pip install 'rags-expert[EXTRA]'``)."""

    def __init__(self, path: Path, suffix: str, extra: str) -> None:
        self.suffix, self.extra = suffix, extra
        super().__init__(f"{shown_path(path)}: {suffix} files need {install_hint(extra)}")


def install_hint(extra: str) -> str:
    """The command that installs an optional extra: ``pip install 'rags-expert[rst]'``."""
    return f"pip install 'rags-expert[{extra}]'"


@dataclass
class TextUnit:
    """A piece of a file to chunk: its text, title, page (PDF), extra metadata (JSONL) and, for a unit that is a
    part of its page (a PDF table), the section it sits in (its caption), put before the chunks' own sections."""

    text: str
    title: str
    page: int | None = None
    key: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    section: str = ""


@dataclass(frozen=True)
class LoadOptions:
    """Settings of the loaders (``ingestion.*``; the defaults are the settings' defaults), the bounds on what one
    file may cost among them: a file over a bound is skipped (:class:`OverLimitError`) or read in a simpler way
    with a warning (:func:`warn_over_limit`), each naming the bound and its setting."""

    notebook_output_chars: int = 2000
    """Characters of a notebook code cell's text outputs kept (0: none)."""
    max_unzipped_mb: int = 100
    """MiB a zip-based file (``.docx``) may hold once inflated, all its parts together (:func:`check_zip`)."""
    pdf_max_table_crossings: int = 5000
    """Crossings of a PDF page's ruled lines over which its tables are not looked for."""


class OverLimitError(UnreadableFileError):
    """A file over one of the loaders' bounds: skipped, with a line naming the bound and its setting."""

    def __init__(self, path: Path, what: str, setting: str) -> None:
        super().__init__(f"{shown_path(path)}: {what} ({setting_hint(f'ingestion.{setting}')})")


def warn_over_limit(path: Path, what: str, setting: str, instead: str) -> None:
    """One warning line for a file read in a simpler way because it is over a bound (``instead``: how it is read)."""
    log.warning("%s: %s (%s): %s", shown_path(path), what, setting_hint(f"ingestion.{setting}"), instead)


def check_zip(path: Path, data: bytes, options: LoadOptions) -> None:
    """Refuse a zip-based file (``.docx``) whose parts, as its directory declares them, inflate to more than
    ``max_unzipped_mb``, before any part is inflated: a decompression bomb is never inflated. The declared sizes
    bound what is read: Python's zipfile stops a part at its declared size (and fails its CRC check)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # not a zip: the format's parser failure (``load_file``)
        total = sum(info.file_size for info in archive.infolist())
    limit = options.max_unzipped_mb * MIB
    if total > limit:
        what = f"inflates to {total / MIB:,.0f} MiB, over the limit of {options.max_unzipped_mb:,} MiB"
        raise OverLimitError(path, what, "max_unzipped_mb")


BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16's: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
"""The byte-order marks of UTF-16 and UTF-32 text (a spreadsheet's "Unicode text" export) and their codecs."""


def decode(data: bytes, path: Path) -> str:
    """The text of every text format: UTF-8 (with or without a BOM), or UTF-16/UTF-32 after its BOM; an error for
    binary content (NUL bytes, NUL characters after a BOM) and undecodable bytes."""
    codec = next((name for bom, name in BOMS if data.startswith(bom)), "UTF-8")
    if codec == "UTF-8" and b"\x00" in data[:8192]:
        raise UnreadableFileError(f"{shown_path(path)}: binary content (NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig" if codec == "UTF-8" else codec.lower())
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{shown_path(path)}: not {codec} text ({exc.reason} at byte {exc.start})") from exc
    if "\x00" in text[:8192]:
        raise UnreadableFileError(f"{shown_path(path)}: binary content (NUL characters), not text")
    return text


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
