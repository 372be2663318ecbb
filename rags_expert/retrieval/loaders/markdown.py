"""Markdown and plain text: one unit; Markdown's docs-site markup reduced to its visible text."""

from __future__ import annotations

from pathlib import Path

from rags_expert.retrieval.loaders.base import TextUnit, decode
from rags_expert.retrieval.loaders.markup import reduce_markup


def markdown_title(text: str, path: Path) -> str:
    """The front matter's ``title:``, else the first heading outside code, else the file name without suffix
    (:func:`rags_expert.retrieval.chunking.markdown_title`)."""
    from rags_expert.retrieval.chunking import markdown_title as title  # the Markdown parser, loaded when needed

    return title(text) or path.stem


def load_markdown(path: Path, data: bytes) -> list[TextUnit]:
    """Markdown: one unit, its title read before its front matter and docs-site markup are reduced
    (:mod:`rags_expert.retrieval.loaders.markup`)."""
    text = decode(data, path)
    return [TextUnit(text=reduce_markup(text), title=markdown_title(text, path))]


def load_text(path: Path, data: bytes) -> list[TextUnit]:
    """Plain text: one unit, as it is."""
    text = decode(data, path)
    return [TextUnit(text=text, title=markdown_title(text, path))]
