"""Jupyter notebooks (``.ipynb``, JSON, no extra): Markdown cells as Markdown (docs-site markup reduced), code
cells as fenced code in the notebook's language, and their text outputs (streams, ``text/plain`` results,
errors' names and values) after them, capped at ``ingestion.notebook_output_chars`` characters a cell. An nbformat 3
notebook (IPython 1-2: cells in ``worksheets``, a code cell's text in ``input``, heading cells) is read the same way."""

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
        elif kind in ("execute_result", "display_data", "pyout"):  # nbformat 3: pyout, its text not under data
            texts.append(_source((output.get("data") or {}).get("text/plain") or output.get("text")))
        elif kind in ("error", "pyerr"):
            texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    text = "\n".join(t.rstrip("\n") for t in texts if t.strip())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _cells(notebook: dict[str, Any]) -> list[Any] | None:
    """A notebook's cells: nbformat 4's ``cells``, or nbformat 3's worksheets' cells as nbformat 4 has them (a code
    cell's ``input`` as its source, a heading cell as a Markdown heading); None: neither."""
    if isinstance(notebook.get("cells"), list):
        return list(notebook["cells"])
    worksheets = notebook.get("worksheets")
    if not isinstance(worksheets, list):
        return None
    cells: list[Any] = []
    for sheet in worksheets:
        for cell in (sheet.get("cells") if isinstance(sheet, dict) else None) or []:
            if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "heading"):
                cells.append(cell)
            elif cell["cell_type"] == "code":
                cells.append({**cell, "source": cell.get("input")})
            else:
                level = cell["level"] if isinstance(cell.get("level"), int) else 1
                heading = "#" * min(max(level, 1), 6) + " " + " ".join(_source(cell.get("source")).split())
                cells.append({"cell_type": "markdown", "source": heading})
    return cells


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
    cells = _cells(notebook) if isinstance(notebook, dict) else None
    if cells is None:
        raise UnreadableFileError(f"{shown_path(path)}: not a notebook (no list of cells, nor nbformat 3 worksheets)")
    meta: dict[str, Any] = notebook["metadata"] if isinstance(notebook.get("metadata"), dict) else {}
    code_language = next((c.get("language") for c in cells if isinstance(c, dict) and c.get("language")), "")
    language = str(
        (meta.get("language_info") or {}).get("name")
        or (meta.get("kernelspec") or {}).get("language")
        or code_language  # nbformat 3: each code cell names its language
        or ""
    )
    parts, title = [], ""
    for cell in cells:
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
