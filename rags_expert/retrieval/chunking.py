"""Split documents into chunks: structure from a CommonMark parser, sizes from LangChain's recursive splitter.

* **Markdown** (``markdown=True``): markdown-it-py parses the text. Top-level headings (ATX ``#`` and setext
  underlines) open sections; the heading path (``Guide > Install``) becomes the chunk's ``section``. Lines inside
  fenced (````` ``` `````, ``~~~``) or indented code, and a leading YAML front matter, are never headings.
* **Code blocks are atomic**: a code block that fits in a chunk is never split across chunks. A larger one is cut
  between lines into parts that each fit, and every part of a fenced block is re-opened and closed with the
  block's own fence lines, so each part is still a valid fence (a single line longer than a chunk is cut too).
* **Sizes**: LangChain's ``RecursiveCharacterTextSplitter`` splits the rest at horizontal rules, blank lines, line
  ends, sentence ends, spaces, then characters, and merges the pieces into chunks of at most ``size`` characters,
  each starting with trailing pieces of the previous chunk up to ``overlap`` characters. Pieces keep their
  separators: newlines and indentation (nested lists, code) are preserved, never collapsed.
* **Attribute lists** (``{#anchor}``, ``{ #anchor }``, ``{: .class }``) are dropped from headings: the heading path
  names the section, not its anchor.
* **HTML blocks** in Markdown (a logo, a row of badges, ``<p align="center">``, a comment) are reduced to their
  visible text: markup is not what a chunk says, and a page opening with a kilobyte of badges would otherwise
  push its first paragraph ("X is a lightweight framework …") into the next chunk.
* **Plain text** (``markdown=False``: .txt files, PDF pages) goes to the recursive splitter as it is.
* **Titles** (:func:`markdown_title`, used by the loaders): the front matter's ``title:``, else the first
  heading found by the same parser, so a ``# comment`` line in a shell code block is never a title.

MarkdownHeaderTextSplitter was not used: it strips every line (code and nested lists lose their indentation)
and joins lines with ``"  \\n"``; the experimental Markdown splitter drops an unterminated fence's text.
Changing anything here or in the loaders that changes chunk texts must bump :data:`CHUNKER_VERSION` (ingest
re-chunks on it); ``tests/retrieval/test_chunker_fingerprint.py`` fails until it is, for what its samples show.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_text_splitters import RecursiveCharacterTextSplitter
from markdown_it import MarkdownIt
from markdown_it.token import Token

CHUNKER_VERSION = "v12"
"""Version of the chunking rules and of the loaders' text, recorded with every point (see :func:`chunking_label`).
v4: the loaders reduce docs-site markup and write tables as rows with their column names (issue 36).
v5: the Markdown loader keeps code spans as written (```${VAR}``` was read as a role), MyST version directives
read "New in version X: …", and unknown directives keep their words without an invented title (issue 36).
v6: a table without a header row whose first column names its rows (a Word two-column table with no header row, an
HTML table of ``<th>label</th><td>value</td>`` rows) reads each row as "label: value" after its first row, which names the record as a header names columns.
v7: a reStructuredText object description (``.. py:data:: DEBUG``, ``.. confval:: timeout``) is a heading one level
below its section, so its lines ("Default: ``False``") sit under the object's name; its ``:type:``, ``:value:`` and
``:default:`` options show as lines. The same in Markdown for a MyST description (```` ```{py:data} DEBUG ````) and
an ``eval-rst`` block's, below the page's heading. An rst inline literal holding backticks (``:func:`x```, quoted
as an example) is one code span, fenced by more backticks.
v8: a reStructuredText table without a header row is a list of "label: value" rows (its first row was read as a
header); a title's roles are reduced in the document's title too
(``:mod:`celery` --- …`` was the title as written); Sphinx's author directives are dropped, as Sphinx hides them.
v9: a key-value record table (no header row, at most 10 rows: a Word parameter table) is named on every line by its
first row and its short fields, so a long field (a description) is read with the record's value.
v10: Sphinx 7.3's version directive names (``.. version-added:: 7.6``) read as the old ones ("New in version 7.6."),
and sphinx-tabs' ``.. code-tab:: ini`` is a code block (its lines were read as reStructuredText: a Windows path
lost its backslashes).
v11: an admonition opener without a space after its marker (``!!!tip``, as Python-Markdown allows) is read as one.
v12: a GitHub alert (``> [!NOTE]``) reads as its type then its body, without its ``>`` marks, and a reference-style
link (``[text][ref]``, ````[`Data`][]````) as its text (both were quoted in answers as written)."""
LEGACY_CHUNKING = "v1"
"""What points ingested before chunking labels existed (the hand-written sentence packer) count as."""

# Tried in order; each is a regex, kept at the end of the piece it closes.
_SEPARATORS = [
    r"\n[ \t]*(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})\n",  # horizontal rule
    r"\n\n",
    r"\n",
    r"(?<=[.!?])[ \t]+",  # sentence end
    r" ",
    "",
]
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:.*\n)*?(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
_MD = MarkdownIt("commonmark").disable("inline")  # block structure; a heading's inline markup is parsed alone
_INLINE = MarkdownIt("commonmark")
WINDOW_LINES = 4096
"""Lines parsed at a time (:func:`_blocks`): only a window's tokens are in memory, not the whole text's (a
million ``#`` lines made three million tokens, 1.5 GB)."""
# a heading's trailing {#anchor .class} (attr_list), tried from the start of a whitespace run only (linear)
_ATTRIBUTES = re.compile(r"(?<!\s)\s*+\{\s*+[#.:][^{}]*+\}\s*+$")  # {#anchor}, { #anchor }, {: .class }
_TAG = re.compile(r"<[^<>]*+>")
# a line that may be a top-level heading with text: "# Title" (not "#" nor "# ##"), or a setext underline
_MAY_BE_TITLE = re.compile(r"^ {0,3}(?:#{1,6}[ \t]+(?!#*[ \t]*$)\S|(?:=+|-+)[ \t]*$)", re.MULTILINE)


@dataclass
class Chunk:
    """A chunk of text and the heading path it sits under."""

    text: str
    section: str


def chunking_label(size: int, overlap: int) -> str:
    """The label stored with every point: chunker version and settings (a change means re-chunking)."""
    return f"{CHUNKER_VERSION} size={size} overlap={overlap}"


def is_markdown(path: Path) -> bool:
    """Whether a file's text units are chunked as Markdown (else as plain text: .txt, PDF pages), as the loaders'
    registry says (:mod:`rags_expert.retrieval.loaders.registry`)."""
    from rags_expert.retrieval.loaders.registry import format_of

    fmt = format_of(path)
    return fmt is None or fmt.markdown


class _Splitter(RecursiveCharacterTextSplitter):
    """LangChain's recursive splitter, but a text that no separator splits is cut into windows directly: the
    parent splits it into single characters and merges them back one at a time (84 s and 1 GB for 50 MB
    without a space). The windows are the chunks the parent makes: ``size`` characters every ``size - overlap``."""

    def _split_text(self, text: str, separators: list[str]) -> list[str]:
        """The parent's split, or the windows of a text none of ``separators`` but the last ("") splits."""
        if separators[-1:] != [""] or any(re.search(s, text) for s in separators[:-1]):
            return super()._split_text(text, separators)
        size, step = self._chunk_size, self._chunk_size - self._chunk_overlap
        if len(text) <= size:
            return [text] if text else []
        full = (len(text) - size - 1) // step + 1  # windows followed by at least one more character
        return [text[i * step : i * step + size] for i in range(full)] + [text[full * step :]]


def _splitter(size: int, overlap: int) -> RecursiveCharacterTextSplitter:
    """The recursive splitter: regex separators kept at the end of each piece, whitespace untouched."""
    return _Splitter(
        separators=_SEPARATORS,
        is_separator_regex=True,
        keep_separator="end",
        chunk_size=size,
        chunk_overlap=overlap,
        strip_whitespace=False,
    )


@dataclass
class _Atoms:
    """Code blocks stood in for by placeholders of the same length that no separator can split."""

    text: str
    parts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        free = (chr(c) for c in range(0xE000, 0xF8FF) if chr(c) not in self.text)  # private-use characters
        self.mark, self.pad = next(free), next(free)
        self.pattern = re.compile(re.escape(self.mark) + r"(\d+)" + re.escape(self.pad) + "*")

    def add(self, part: str) -> str:
        """A placeholder for ``part`` (one line, as long as ``part``)."""
        tag = f"{self.mark}{len(self.parts)}"
        self.parts.append(part)
        return tag + self.pad * (len(part) - len(tag))

    def restore(self, text: str) -> str:
        """``text`` with its placeholders replaced by the code they stand for."""
        return self.pattern.sub(lambda m: self.parts[int(m.group(1))], text)


def _cut_lines(lines: list[str], room: int) -> list[list[str]]:
    """Lines grouped greedily into groups of at most ``room`` characters (joined by newlines)."""
    groups: list[list[str]] = [[]]
    used = 0
    for line in lines:
        for piece in [line[i : i + room] for i in range(0, len(line), room)] or [""]:
            if groups[-1] and used + 1 + len(piece) > room:
                groups.append([])
                used = 0
            used += len(piece) + (1 if len(groups[-1]) else 0)
            groups[-1].append(piece)
    return groups


def _code_parts(lines: list[str], markup: str, limit: int) -> list[str]:
    """A code block whole if it fits in ``limit`` characters, else cut between lines; fence parts re-fenced."""
    text = "\n".join(lines)
    if len(text) <= limit:
        return [text]
    opener = lines[0]
    prefix = opener[: opener.find(markup)] if markup else ""
    last = lines[-1].strip(" \t>")
    closed = bool(markup) and len(lines) > 1 and len(last) >= len(markup) and set(last) == {markup[0]}
    closer = lines[-1] if closed else prefix + markup
    room = limit - len(opener) - len(closer) - 2
    if not markup or room < limit // 2:  # indented code, or fence lines too long to repeat: plain line groups
        return ["\n".join(g) for g in _cut_lines(lines, limit)]
    body = lines[1:-1] if closed else lines[1:]
    return [f"{opener}\n" + "\n".join(g) + f"\n{closer}" for g in _cut_lines(body, room)]


def _front_matter(lines: list[str]) -> int:
    """The number of lines of a leading YAML front matter (0: none)."""
    if not lines or lines[0].rstrip(" \t") != "---":
        return 0
    front = _FRONT_MATTER.match("\n".join(lines) + "\n")
    return front.group(0).count("\n") if front else 0


def _blocks(lines: list[str], env: dict[str, Any]) -> Iterator[Token]:
    """The block tokens of a Markdown text's lines after its front matter (not read as a rule and a setext
    heading), their ``map`` in the text's line numbers, parsed :data:`WINDOW_LINES` lines at a time.

    A window's tokens are kept up to the last top-level block (or item of a top-level list) that starts in it,
    which may go on past the window; the next window is parsed from there, so block structure is what a parse
    of the whole text finds. A block longer than a window is parsed in a window doubled until it fits. ``env``
    collects the link reference definitions seen so far.
    """
    start, size = _front_matter(lines), WINDOW_LINES
    while start < len(lines):
        end = min(len(lines), start + size)
        tokens = _MD.parse("\n".join(lines[start:end]), env)
        cut = end - start
        if end < len(lines):
            cut = max((t.map[0] for t in tokens if t.map and _restarts(t)), default=0)
            if cut == 0:  # one block fills the window
                size *= 2
                continue
        for tok in tokens:
            if tok.map and tok.map[0] >= cut:
                break
            if tok.map:
                tok.map = [tok.map[0] + start, tok.map[1] + start]
            yield tok
        start, size = start + cut, WINDOW_LINES


def _restarts(tok: Token) -> bool:
    """Whether a parse may start afresh where ``tok`` starts: a top-level block, or an item of a top-level list."""
    return tok.nesting >= 0 and (tok.level == 0 or (tok.level == 1 and tok.type == "list_item_open"))


def _plain_text(inline: Token) -> str:
    """The words of an inline token (a heading's text): text, code and image alt text, without markup."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain_text(child))
    return " ".join("".join(parts).split())


def _front_matter_title(lines: list[str], skip: int) -> str:
    """The ``title:`` of a leading YAML front matter of ``skip`` lines ('' if none or not valid YAML)."""
    import yaml

    try:
        meta = yaml.safe_load("\n".join(lines[1 : skip - 1])) if skip > 1 else None
    except yaml.YAMLError:
        return ""
    title = meta.get("title") if isinstance(meta, dict) else None
    return " ".join(str(title).split()) if isinstance(title, (str, int, float)) else ""


def markdown_title(text: str) -> str:
    """A Markdown document's title ('' if it has none): the ``title:`` of its YAML front matter, else the
    text of its first heading (ATX or setext) outside code blocks, fenced or indented, and outside quotes and
    lists; a trailing attribute list (``{#anchor}``) is dropped. The text is parsed only up to that heading."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if title := _front_matter_title(lines, _front_matter(lines)):
        return title
    if not _MAY_BE_TITLE.search(text):  # no parse at all (a million "#" lines took 20 s)
        return ""
    env: dict[str, Any] = {}
    tokens = _blocks(lines, env)
    for tok in tokens:
        if tok.type == "heading_open" and tok.level == 0:
            content = next(tokens).content
            if content.strip() and (title := _ATTRIBUTES.sub("", _plain_text(_INLINE.parseInline(content, env)[0]))):
                return title
    return ""


def _visible(lines: list[str]) -> list[str]:
    """An HTML block's visible text, one line per line that has any (a comment, a logo or a badge row: none)."""
    if "".join(lines).lstrip().startswith("<!--"):
        return []
    text = html.unescape(_TAG.sub(" ", "\n".join(lines)))
    return [" ".join(line.split()) for line in text.split("\n") if line.strip()]


@dataclass(frozen=True)
class _Block:
    """A top-level heading (``kind`` "heading", with its level and title), a code block ("code", with its fence
    markup, '' when indented; a front matter is one) or a top-level HTML block ("html") over lines ``start`` to
    ``end``."""

    start: int
    end: int
    kind: str
    level: int = 0
    title: str = ""
    markup: str = ""


def _structure(lines: list[str]) -> Iterator[_Block]:
    """The top-level headings, code blocks and HTML blocks of a Markdown text's lines, in order."""
    if skip := _front_matter(lines):
        yield _Block(0, skip, "code")
    tokens = _blocks(lines, {})
    for tok in tokens:
        if not tok.map:
            continue
        if tok.type == "heading_open" and tok.level == 0:
            title = _ATTRIBUTES.sub("", next(tokens).content).strip()
            yield _Block(tok.map[0], tok.map[1], "heading", level=int(tok.tag[1]), title=title)
        elif tok.type in ("fence", "code_block"):
            yield _Block(tok.map[0], tok.map[1], "code", markup=tok.markup)
        elif tok.type == "html_block" and tok.level == 0:
            yield _Block(tok.map[0], tok.map[1], "html")


def split_sections(text: str, limit: int) -> tuple[list[tuple[str, str]], _Atoms]:
    """(heading path, body) pairs of a Markdown text, its code blocks replaced by placeholders.

    The heading path joins nested headings with ' > '; code blocks longer than ``limit`` characters
    are cut into parts of at most ``limit`` characters, each with its own placeholder line.
    """
    lines = text.split("\n")
    blocks = _structure(lines)
    atoms = _Atoms(text)
    out: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []
    block = next(blocks, None)
    i = 0
    while i < len(lines):
        if block is None or block.start != i:
            body.append(lines[i])
            i += 1
            continue
        if block.kind == "heading":
            if any(line.strip() for line in body):
                out.append((" > ".join(h for _, h in stack if h), "\n".join(body)))
            stack = [(lvl, h) for lvl, h in stack if lvl < block.level] + [(block.level, block.title)]
            body = []
        elif block.kind == "code":
            body.extend(atoms.add(part) for part in _code_parts(lines[i : block.end], block.markup, limit))
        else:
            body.extend(_visible(lines[i : block.end]))
        i = block.end
        block = next((b for b in blocks if b.start >= i), None)
    out.append((" > ".join(h for _, h in stack if h), "\n".join(body)))
    return [(path, b) for path, b in out if b.strip()], atoms


def _tidy(text: str) -> str:
    """A chunk without leading blank lines and trailing whitespace (the first line keeps its indentation)."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", text).rstrip()


def chunk_text(text: str, size: int = 1200, overlap: int = 200, markdown: bool = True) -> list[Chunk]:
    """Chunks of a document: Markdown sections (code blocks atomic) or plain text, split to ``size`` characters."""
    if overlap >= size:
        raise ValueError(f"chunk overlap ({overlap}) must be smaller than chunk size ({size})")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    splitter = _splitter(size, overlap)
    if not markdown:
        return [Chunk(t, "") for t in map(_tidy, splitter.split_text(text)) if t]
    # Atoms stay 2 characters under the limit: a placeholder with its line end still fits in a piece.
    sections, atoms = split_sections(text, size - 2)
    out: list[Chunk] = []
    for section, body in sections:
        out.extend(Chunk(t, section) for t in (_tidy(atoms.restore(p)) for p in splitter.split_text(body)) if t)
    return out
