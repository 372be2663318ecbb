"""Jupyter notebooks (``.ipynb``, JSON, no extra): Markdown cells as Markdown (docs-site markup reduced), code
cells as fenced code in the notebook's language, and their text outputs (streams, ``text/plain`` results,
errors' names and values) after them, capped at ``ingestion.notebook_output_chars`` characters a cell."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rags_expert.retrieval.loaders.base import LoadOptions, TextUnit, UnreadableFileError, decode, shown_path
from rags_expert.retrieval.loaders.markdown import markdown_title
from rags_expert.retrieval.loaders.markup import reduce_markup


def _source(value: Any) -> str:
    """A cell's source or an output's text: a string, or a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _outputs(cell: dict[str, Any], limit: int) -> str:
    """The text outputs of a code cell, cut to ``limit`` characters (with an ellipsis)."""
    texts = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(_source(output.get("text")))
        elif kind in ("execute_result", "display_data"):
            texts.append(_source((output.get("data") or {}).get("text/plain")))
        elif kind == "error":
            texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    text = "\n".join(t.rstrip("\n") for t in texts if t.strip())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _fenced(text: str, language: str) -> str:
    """``text`` in a code fence longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def load_notebook(path: Path, data: bytes, options: LoadOptions | None = None) -> list[TextUnit]:
    """A notebook: one unit of Markdown; title: the first Markdown cell's heading, else the file name."""
    options = options or LoadOptions()
    try:
        notebook = json.loads(decode(data, path))
    except json.JSONDecodeError as exc:
        raise UnreadableFileError(f"{shown_path(path)}: invalid notebook JSON ({exc.msg})") from exc
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise UnreadableFileError(f"{shown_path(path)}: not a notebook (no list of cells)")
    meta: dict[str, Any] = notebook["metadata"] if isinstance(notebook.get("metadata"), dict) else {}
    language = str(
        (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language") or ""
    )
    parts, title = [], ""
    for cell in notebook["cells"]:
        if not isinstance(cell, dict):
            continue
        source = _source(cell.get("source")).strip("\n")
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            title = title or markdown_title(source, Path(""))
            parts.append(reduce_markup(source))
        elif cell.get("cell_type") == "code":
            parts.append(_fenced(source, language))
            if options.notebook_output_chars and (out := _outputs(cell, options.notebook_output_chars)):
                parts.append("Output:\n\n" + _fenced(out, "text"))
        else:
            parts.append(source)
    return [TextUnit(text="\n\n".join(parts), title=title or path.stem)]
