"""Read files into text units, one module per format and one registry of suffixes
(:mod:`rags_expert.retrieval.loaders.registry`).

Markdown (docs-site markup reduced: :mod:`~rags_expert.retrieval.loaders.markup`), plain text, HTML, PDF (a unit
per page; tables too with the ``pdf`` extra), JSONL (a unit per line), reStructuredText (``rst`` extra), Word
``.docx`` (``docx`` extra), Jupyter notebooks, CSV and TSV. Tables of every format become a line per row with its
column names (:mod:`~rags_expert.retrieval.loaders.tables`). Files that cannot be ingested raise
:class:`UnreadableFileError` naming the reason; a format whose extra is missing raises
:class:`MissingExtraError` naming the ``pip install`` that adds it; a file over one of the bounds on what a file
may cost (:class:`LoadOptions`: the inflated size of a ``.docx``, the ruled lines of a PDF page) is skipped with
:class:`OverLimitError` or read in a simpler way with a warning, each naming the bound and its setting.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

from rags_expert.retrieval.loaders.base import (
    EmptyFileError,
    LoadOptions,
    MissingExtraError,
    OverLimitError,
    TextUnit,
    UnreadableFileError,
    install_hint,
    read_source,
    shown_path,
)
from rags_expert.retrieval.loaders.html import load_html
from rags_expert.retrieval.loaders.jsonl import TEXT_KEYS, load_jsonl
from rags_expert.retrieval.loaders.markdown import load_markdown, load_text
from rags_expert.retrieval.loaders.pdf import load_pdf
from rags_expert.retrieval.loaders.registry import FORMATS, Format, format_of

__all__ = [
    "FORMATS",
    "SUPPORTED_SUFFIXES",
    "TEXT_KEYS",
    "EmptyFileError",
    "Format",
    "LoadOptions",
    "MissingExtraError",
    "OverLimitError",
    "TextUnit",
    "UnreadableFileError",
    "format_of",
    "install_hint",
    "iter_files",
    "load_file",
    "load_html",
    "load_jsonl",
    "load_markdown",
    "load_pdf",
    "load_text",
    "read_source",
    "shown_path",
    "source_path",
]

SUPPORTED_SUFFIXES = frozenset(FORMATS)


def load_file(path: Path, data: bytes | None = None, options: LoadOptions | None = None) -> list[TextUnit]:
    """The text units of one supported file.

    A format whose optional extra is not installed raises :class:`MissingExtraError` before the file is read.
    Any failure of the file's parser (pypdf's ``LimitReachedError`` on a decompression bomb, a recursion error
    on a self-referencing object or deeply nested JSON) is an :class:`UnreadableFileError` naming the error's
    type: one bad file never stops an ingestion.
    """
    fmt = format_of(path)
    if fmt is None:
        raise UnreadableFileError(f"{shown_path(path)}: unsupported file type {path.suffix!r}")
    if not fmt.available():
        raise MissingExtraError(path, path.suffix.lower(), fmt.extra)
    data = read_source(path) if data is None else data
    try:
        return fmt.load(path, data, options or LoadOptions())
    except UnreadableFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a third-party parser on untrusted bytes may raise anything
        raise UnreadableFileError(f"{shown_path(path)}: unreadable {fmt.name} ({type(exc).__name__})") from exc


def source_path(path: Path) -> str:
    """The path a file's chunks are stored under (their ``source``): absolute, its folders resolved, the file itself
    not followed. A symbolic link is stored under its own path in the folder it was found in, never its target's,
    so ``ingest --prune`` drops its chunks when the link goes; any other file's source is its resolved path."""
    return os.path.join(os.path.realpath(path.parent), path.name)


def is_under(path: str, folder: str) -> bool:
    """Whether the absolute ``path`` is ``folder`` or inside it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


IGNORE_FILE = ".ragsignore"
"""The default name of the file in an ingested folder that lists what to leave out (``ingestion.ignore_file``)."""


def ignore_patterns(folder: Path, name: str = IGNORE_FILE) -> list[str]:
    """The patterns of ``folder``'s ignore file (``name``; none when it is absent or ``name`` is empty): one a
    line, ``#`` starts a comment."""
    f = folder / name if name else None
    if f is None or not f.is_file():
        return []
    lines = (ln.split("#", 1)[0].strip() for ln in f.read_text(encoding="utf-8", errors="replace").splitlines())
    return [ln.strip("/") if ln.startswith("/") or ln.endswith("/") else ln for ln in lines if ln]


def is_ignored(relative: str, patterns: list[str]) -> bool:
    """Whether a path relative to its ingested folder (``/``-separated) is left out by ``patterns``: a pattern
    without ``/`` matches the name of the file or of any folder above it (``benchmarks.md``, ``drafts``,
    ``*.log``), one with ``/`` the path from the folder, or a folder of it (``guide/old``, ``api/*.md``)."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pat in patterns:
        if "/" in pat:
            if any(fnmatch.fnmatchcase(p, pat) for p in prefixes):
                return True
        elif any(fnmatch.fnmatchcase(part, pat) for part in parts):
            return True
    return False


def iter_files(
    paths: list[Path],
    ignored: list[Path] | None = None,
    outside: list[Path] | None = None,
    follow_outside: bool = False,
    ignore_file: str = IGNORE_FILE,
    left_out: list[Path] | None = None,
) -> Iterator[Path]:
    """Files to ingest under the given files and folders (sorted; hidden entries skipped).

    A path named explicitly is always yielded (so that why it cannot be read is reported). Under a
    folder, files of a supported type are yielded, symlinks among them even when broken or looping;
    files of other types are appended to ``ignored``. A symlink whose target is outside its folder is appended to
    ``outside`` and yielded only with ``follow_outside`` (``ingestion.follow_outside_links``): a cloned folder's
    link to any file its user can read is not ingested by default. A symlink to another file yielded from the
    same folder is not yielded: that file is ingested once, under its own path. A folder's ignore file
    (``ignore_file``, ``.ragsignore`` by default: :func:`is_ignored`) leaves out what it lists, appended to
    ``left_out``.
    """
    for root in paths:
        if not root.is_dir():
            yield root
            continue
        found: list[Path] = []
        patterns = ignore_patterns(root, ignore_file)
        for p in sorted(root.rglob("*")):
            if any(x.startswith(".") for x in p.relative_to(root).parts) or p.is_dir():
                continue
            if patterns and is_ignored(p.relative_to(root).as_posix(), patterns):
                if left_out is not None:
                    left_out.append(p)
                continue
            if p.suffix.lower() in SUPPORTED_SUFFIXES:
                found.append(p)
            elif ignored is not None and (p.is_file() or p.is_symlink()):
                ignored.append(p)
        # rglob does not descend into linked folders: below a folder, only a file itself can be a link
        real_root = os.path.realpath(root)
        files = {os.path.realpath(p) for p in found if not p.is_symlink()}
        for p in found:
            if p.is_symlink():
                target = os.path.realpath(p)
                if not is_under(target, real_root):
                    if outside is not None:
                        outside.append(p)
                    if not follow_outside:
                        continue
                elif target in files:
                    continue
            yield p
