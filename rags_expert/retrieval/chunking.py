"""Split text into overlapping chunks that respect Markdown headings and sentence boundaries."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
# A sentence ends at . ! ? (optionally followed by a closing quote/bracket) before whitespace, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n")


@dataclass
class Chunk:
    """A chunk of text and the heading path it sits under."""

    text: str
    section: str


def split_sections(text: str) -> list[tuple[str, str]]:
    """(heading path, body) pairs; the heading path joins nested headings with ' > '."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    current = ""
    for m in _HEADING.finditer(text):
        body = text[pos : m.start()].strip()
        if body:
            out.append((current, body))
        level = len(m.group(1))
        stack = [(lvl, h) for lvl, h in stack if lvl < level] + [(level, m.group(2).strip())]
        current = " > ".join(h for _, h in stack)
        pos = m.end()
    body = text[pos:].strip()
    if body:
        out.append((current, body))
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences (and paragraphs) of a text, whitespace-normalised."""
    parts = _SENTENCE_END.split(text)
    return [re.sub(r"\s+", " ", p).strip() for p in parts if p and p.strip()]


def _hard_split(sentence: str, size: int) -> list[str]:
    """A sentence longer than ``size`` split at word boundaries (at character boundaries if it must)."""
    pieces, cur = [], ""
    for word in sentence.split(" "):
        while len(word) > size:
            if cur:
                pieces.append(cur)
                cur = ""
            pieces.append(word[:size])
            word = word[size:]
        if cur and len(cur) + 1 + len(word) > size:
            pieces.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    if cur:
        pieces.append(cur)
    return pieces


def pack(sentences: list[str], size: int, overlap: int) -> list[str]:
    """Greedy packing of sentences into chunks of at most ``size`` characters.

    Each new chunk starts with the trailing sentences of the previous one that
    fit in ``overlap`` characters, so context crossing a boundary is kept.
    """
    units: list[str] = []
    for s in sentences:
        units.extend(_hard_split(s, size) if len(s) > size else [s])
    chunks: list[str] = []
    cur: list[str] = []
    cur_len = 0
    for s in units:
        if cur and cur_len + 1 + len(s) > size:
            chunks.append(" ".join(cur))
            carry: list[str] = []
            carry_len = 0
            for prev in reversed(cur):
                if carry_len + len(prev) + 1 > overlap or carry_len + len(prev) + 1 + len(s) > size:
                    break
                carry.insert(0, prev)
                carry_len += len(prev) + 1
            cur, cur_len = carry, max(carry_len - 1, 0)
        cur.append(s)
        cur_len += len(s) + (1 if cur_len else 0)
    if cur:
        chunks.append(" ".join(cur))
    return chunks


def chunk_text(text: str, size: int = 1200, overlap: int = 200) -> list[Chunk]:
    """Chunks of a document: sections first, then sentences packed with overlap within each section."""
    if overlap >= size:
        raise ValueError(f"chunk overlap ({overlap}) must be smaller than chunk size ({size})")
    out: list[Chunk] = []
    for section, body in split_sections(text):
        for piece in pack(split_sentences(body), size, overlap):
            out.append(Chunk(text=piece, section=section))
    return out
