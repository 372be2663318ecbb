"""The one registry of file types: for each suffix, its format's name, its loader, whether its text is chunked as
Markdown, and the optional extra (and the module that extra installs) it needs.

A format whose extra is missing is not silently passed over: its files are skipped with one line per format
("skipped 12 .rst files: pip install 'rags-expert[rst]'", :mod:`rags_expert.retrieval.ingest`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rags_expert.retrieval.loaders.base import LoadOptions, TextUnit, check_zip

Loader = Callable[[Path, bytes, LoadOptions], list[TextUnit]]


@dataclass(frozen=True)
class Format:
    """A kind of document: its name (what a parser failure and the summary call it), its loader (``module:function``
    under this package), whether its units are Markdown, and the extra and module it needs (none: '')."""

    name: str
    loader: str
    markdown: bool = True
    extra: str = ""
    module: str = ""
    options: bool = False
    """Whether the loader takes the :class:`LoadOptions`."""
    zipped: bool = False
    """Whether the file is a zip archive (``.docx``): its directory is checked before it is read (``check_zip``)."""

    def load(self, path: Path, data: bytes, options: LoadOptions) -> list[TextUnit]:
        """The units of ``path`` read by this format's loader (imported when first needed)."""
        if self.zipped:
            check_zip(path, data, options)
        module, function = self.loader.split(":")
        loader = getattr(importlib.import_module(f"rags_expert.retrieval.loaders.{module}"), function)
        return loader(path, data, options) if self.options else loader(path, data)  # type: ignore[no-any-return]

    def available(self) -> bool:
        """Whether the module of this format's extra can be imported (always, without an extra)."""
        return not self.module or importable(self.module)


@cache
def importable(module: str) -> bool:
    """Whether ``module`` imports (an import that fails for any reason counts as missing)."""
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a broken install is as good as none
        return False
    return True


MARKDOWN = Format("Markdown", "markdown:load_markdown")
TEXT = Format("text", "markdown:load_text", markdown=False)
HTML = Format("HTML", "html:load_html")
PDF = Format("PDF", "pdf:load_pdf", markdown=False, options=True)
JSONL = Format("JSONL", "jsonl:load_jsonl")
RST = Format("reStructuredText", "rst:load_rst", extra="rst", module="docutils")
DOCX = Format("Word", "docx:load_docx", extra="docx", module="docx", zipped=True)
NOTEBOOK = Format("notebook", "notebook:load_notebook", options=True)
CSV = Format("CSV", "tables:load_csv")
TSV = Format("TSV", "tables:load_tsv")

FORMATS: dict[str, Format] = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdx": MARKDOWN,
    ".txt": TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
    ".jsonl": JSONL,
    ".rst": RST,
    ".docx": DOCX,
    ".ipynb": NOTEBOOK,
    ".csv": CSV,
    ".tsv": TSV,
}
"""Every supported suffix (lower case) and its format."""

PDF_TABLES_EXTRA = "pdf"
"""The extra that reads PDF tables as rows with their column names (pdfplumber); without it, PDF text only."""


def format_of(path: Path) -> Format | None:
    """The format of a file, by its suffix (None: not supported)."""
    return FORMATS.get(path.suffix.lower())
