"""Numbered context for the answer prompt, and the ``[n]`` citations of the answer.

Chunks are framed as data (``<chunk n=...>`` ... ``</chunk>``) and any tag-like text
inside a chunk is neutralised, so a chunk cannot close its frame and speak as
the prompt. Citations are read back from the answer; markers that point at no
chunk are removed, and the sources are exactly the cited chunks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from rags_expert.prompts import neutralise

_CITATION = re.compile(r"\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]")


def chunk_id(doc: Document) -> str:
    """A stable id for a chunk: its ``chunk_id`` metadata, else a hash of source and content."""
    cid = doc.metadata.get("chunk_id") or doc.id
    if cid:
        return str(cid)
    src = str(doc.metadata.get("source", ""))
    return hashlib.sha256(f"{src}\x00{doc.page_content}".encode()).hexdigest()[:32]


def _attr(value: Any) -> str:
    return neutralise(str(value)).replace('"', "'").replace("\n", " ")[:200]


def format_context(docs: Sequence[Document]) -> str:
    """The chunks numbered from 1, each framed as data with its title and source."""
    parts = []
    for n, doc in enumerate(docs, start=1):
        meta = doc.metadata
        attrs = f'n="{n}"'
        if meta.get("title"):
            attrs += f' title="{_attr(meta["title"])}"'
        if meta.get("source"):
            attrs += f' source="{_attr(meta["source"])}"'
        if meta.get("page") is not None:
            attrs += f' page="{_attr(meta["page"])}"'
        parts.append(f"<chunk {attrs}>\n{neutralise(doc.page_content)}\n</chunk>")
    return "\n".join(parts)


def cited_numbers(text: str) -> list[int]:
    """Every chunk number cited as ``[n]`` / ``[n, m]`` in ``text``, in order of first appearance."""
    seen: list[int] = []
    for match in _CITATION.finditer(text):
        for part in re.split(r"[,;]", match.group(1)):
            n = int(part)
            if n not in seen:
                seen.append(n)
    return seen


def clean_citations(text: str, n_chunks: int) -> str:
    """Drop citation numbers that point at no chunk (and markers left empty)."""

    def fix(match: re.Match[str]) -> str:
        nums = [p.strip() for p in re.split(r"[,;]", match.group(1))]
        keep = [p for p in nums if 1 <= int(p) <= n_chunks]
        return f"[{', '.join(keep)}]" if keep else ""

    cleaned = _CITATION.sub(fix, text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", cleaned).strip()


def source_dict(doc: Document, n: int) -> dict[str, Any]:
    """The public description of a cited chunk."""
    meta = doc.metadata
    return {
        "n": n,
        "content": doc.page_content,
        "title": meta.get("title"),
        "source": meta.get("source") or meta.get("uri") or meta.get("file_path"),
        "page": meta.get("page"),
        "score": meta.get("score"),
        "chunk_id": chunk_id(doc),
    }


def cited_sources(text: str, docs: Sequence[Document]) -> tuple[str, list[dict[str, Any]]]:
    """The answer with invalid markers removed, and the sources it cites (sorted by n)."""
    cleaned = clean_citations(text, len(docs))
    numbers = sorted(cited_numbers(cleaned))
    return cleaned, [source_dict(docs[n - 1], n) for n in numbers]
