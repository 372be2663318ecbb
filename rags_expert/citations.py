"""Numbered context for the answer prompt, and the ``[n]`` citations of the answer.

Chunks are framed as data (``<chunk n=...>`` ... ``</chunk>``) and any tag-like text
inside a chunk is neutralised, so a chunk cannot close its frame and speak as
the prompt. Citations are read back from the answer (:func:`iter_citations`): only a
``[n]`` naming a chunk of the context, outside code, counts; every other bracket is
left exactly as written, and the sources are exactly the cited chunks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from rags_expert.prompts import neutralise

_CANDIDATE = re.compile(r"\[[ \t]*([1-9][0-9]*(?:[ \t]*[,;][ \t]*[1-9][0-9]*)*)[ \t]*\]")
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")

HOP_KEY = "retrieval_hop"
"""Chunk metadata: the hop (2, 3, …) whose search found the chunk (absent: the first;
:mod:`rags_expert.rag.retrieve.hops`)."""


def hop_of(doc: Document) -> int:
    """The hop whose search found ``doc`` (1: the question's own searches)."""
    return int(doc.metadata.get(HOP_KEY) or 1)


@dataclass(frozen=True)
class Citation:
    """One citation marker in an answer: ``text[start:end]`` cites chunks ``numbers`` (1-based)."""

    start: int
    end: int
    numbers: tuple[int, ...]


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every fenced code block (```` ``` ```` or ``~~~``); an unclosed fence runs to the end."""
    blocks: list[tuple[int, int]] = []
    offset, opened, fence = 0, -1, ""
    for line in text.splitlines(keepends=True):
        match = _FENCE_LINE.match(line.rstrip("\r\n"))
        if opened < 0 and match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            opened, fence = offset, match.group(1)
        elif (
            opened >= 0
            and match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not match.group(2).strip()
        ):
            blocks.append((opened, offset + len(line)))
            opened = -1
        offset += len(line)
    if opened >= 0:
        blocks.append((opened, len(text)))
    return blocks


def without_code_blocks(text: str) -> str:
    """``text`` without its fenced code blocks: the prose a value may be read from (``--bind-port 9090`` in an
    example does not say the default port)."""
    out, last = [], 0
    for start, end in _fenced_blocks(text):
        out.append(text[last:start])
        last = end
    return "".join([*out, text[last:]])


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Inline code spans in ``text[start:end]``: a run of n backticks up to the next run of exactly n."""
    spans: list[tuple[int, int]] = []
    pos = start
    while (opening := _TICKS.search(text, pos, end)) is not None:
        width = len(opening.group(0))
        closing = next((m for m in _TICKS.finditer(text, opening.end(), end) if len(m.group(0)) == width), None)
        if closing is None:
            pos = opening.end()  # an unmatched run is literal backticks
            continue
        spans.append((opening.start(), closing.end()))
        pos = closing.end()
    return spans


def _prose_segments(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the text outside fenced code blocks and inline code spans."""
    code: list[tuple[int, int]] = []
    pos = 0
    for block_start, block_end in [*_fenced_blocks(text), (len(text), len(text))]:
        code += _code_spans(text, pos, block_start) + [(block_start, block_end)]
        pos = block_end
    pos = 0
    for code_start, code_end in code:
        if code_start > pos:
            yield pos, code_start
        pos = max(pos, code_end)
    if pos < len(text):
        yield pos, len(text)


_CODE_TOKEN = re.compile(r"[A-Za-z0-9_]*(?:_|\.[A-Za-z_]|::|->)[A-Za-z0-9_.:>-]*$")


def _is_subscript(text: str, start: int) -> bool:
    """True when the bracket at ``start`` indexes code: right after ``)`` or ``]``, or after a token that
    looks like an identifier of code (``snake_case``, ``obj.attr``, ``ns::x``, ``p->x``) or a short
    lower-case name (``x``, ``arr``: one to three letters) on a line with code punctuation (``= ; ( ) { }``)."""
    before = text[start - 1] if start > 0 else " "
    if before in ")]":
        return True
    if not (before.isalnum() or before == "_"):
        return False
    token = re.split(r"[^\w.:>-]", text[max(0, start - 80) : start])[-1]
    if _CODE_TOKEN.search(token):
        return True
    line = text[text.rfind("\n", 0, start) + 1 : start]
    return bool(re.fullmatch(r"[a-z]{1,3}", token)) and any(c in line for c in "=;(){}")


def iter_citations(text: str, n_chunks: int) -> Iterator[Citation]:
    """Every citation of ``text``, in order: ``[n]``, ``[n, m]`` / ``[n; m]`` and chains ``[n][m]``.

    A bracket is a citation only when every number in it is a chunk number (1..``n_chunks``),
    it is outside code (fenced blocks and inline code spans), it is not a subscript of a code-like
    token (see :func:`_is_subscript`; the end of the previous citation is fine, so ``[1][2]`` is two
    citations) and not a Markdown link (no ``(`` right after it). Anything else — ``items_list[1]``,
    ``f(x)[1]``, ``[2023]``, ``[7]`` with three chunks, ``[1](https://...)`` — is not a citation and is
    left exactly as written. A longer plain word right before the bracket (``Quill[1]``, ``1871[1]``) is
    prose that forgot its space: models write that constantly, so it stays a citation.
    """
    previous_end = -1
    for seg_start, seg_end in _prose_segments(text):
        for match in _CANDIDATE.finditer(text, seg_start, seg_end):
            start, end = match.span()
            subscript = start != previous_end and _is_subscript(text, start)
            link = text[end : end + 1] == "("
            numbers = tuple(int(p) for p in re.split(r"[,;]", match.group(1)))
            if subscript or link or not all(n <= n_chunks for n in numbers):
                continue
            previous_end = end
            yield Citation(start, end, tuple(dict.fromkeys(numbers)))


def chunk_id(doc: Document) -> str:
    """A stable id for a chunk: its ``chunk_id`` metadata, else a hash of source and content."""
    cid = doc.metadata.get("chunk_id") or doc.id
    if cid:
        return str(cid)
    src = str(doc.metadata.get("source", ""))
    return hashlib.sha256(f"{src}\x00{doc.page_content}".encode()).hexdigest()[:32]


def _attr(value: Any) -> str:
    return neutralise(str(value)).replace('"', "'").replace("\n", " ")[:200]


def format_context(docs: Sequence[Document], *, sources: bool = True) -> str:
    """The chunks numbered from 1, each framed as data with its title and (``sources``) its source."""
    parts = []
    for n, doc in enumerate(docs, start=1):
        meta = doc.metadata
        attrs = f'n="{n}"'
        if meta.get("title"):
            attrs += f' title="{_attr(meta["title"])}"'
        if sources and meta.get("source"):
            attrs += f' source="{_attr(meta["source"])}"'
        if meta.get("page") is not None:
            attrs += f' page="{_attr(meta["page"])}"'
        parts.append(f"<chunk {attrs}>\n{neutralise(doc.page_content)}\n</chunk>")
    return "\n".join(parts)


def cited_numbers(text: str, n_chunks: int) -> list[int]:
    """Every chunk number ``text`` cites (see :func:`iter_citations`), in order of first appearance."""
    return list(dict.fromkeys(n for citation in iter_citations(text, n_chunks) for n in citation.numbers))


def rewrite_citations(text: str, n_chunks: int, rewrite: Callable[[Citation], str]) -> str:
    """``text`` with each citation replaced by ``rewrite(citation)``; everything else exactly as written."""
    parts, pos = [], 0
    for citation in iter_citations(text, n_chunks):
        parts += [text[pos : citation.start], rewrite(citation)]
        pos = citation.end
    return "".join(parts) + text[pos:]


def source_dict(doc: Document, n: int) -> dict[str, Any]:
    """The public description of a cited chunk: ``n`` is its number in the final answer; ``uid`` (= ``chunk_id``)
        identifies the chunk across runs; ``origin`` says which source it came from (``"primary"``, or
        ``"fallback"``: :mod:`rags_expert.rag.retrieve.fallback_source`); ``hop`` which search of a multi-hop question found it (1, 2, …:
    :mod:`rags_expert.rag.retrieve.hops`)."""
    meta = doc.metadata
    uid = chunk_id(doc)
    return {
        "n": n,
        "uid": uid,
        "content": doc.page_content,
        "title": meta.get("title"),
        "source": meta.get("source") or meta.get("uri") or meta.get("file_path"),
        "page": meta.get("page"),
        "score": meta.get("score"),
        "chunk_id": uid,
        "origin": meta.get("retrieval_origin") or "primary",
        "hop": hop_of(doc),
    }


def cited_sources(text: str, docs: Sequence[Document]) -> tuple[str, list[dict[str, Any]]]:
    """The answer with its citations renumbered 1..k, and the k chunks it cites, in that order.

    The model cites context numbers (``[2]`` and ``[5]`` of five chunks); hosts show ``[n]`` as a link to
    ``sources[n-1]`` (Fred's UI does), so the answer's first cited chunk becomes ``[1]``, the next new one
    ``[2]``, and ``sources`` lists them in that order (``[2] … [5] … [2]`` → ``[1] … [2] … [1]``). Numbers
    inside one bracket are sorted and de-duplicated; every bracket that is not a citation (see
    :func:`iter_citations`) is left exactly as written.
    """
    order = cited_numbers(text, len(docs))  # context numbers, in order of first appearance
    new = {old: i for i, old in enumerate(order, start=1)}
    renumbered = rewrite_citations(
        text, len(docs), lambda c: "[" + ", ".join(str(n) for n in sorted({new[x] for x in c.numbers})) + "]"
    )
    return renumbered, [source_dict(docs[old - 1], new[old]) for old in order]
