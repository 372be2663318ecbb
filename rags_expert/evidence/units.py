"""The units of a chunk that the evidence scores and quotes, and what each one is about.

Technical documentation does not say its facts in narrative sentences only: a default sits in a list item
(``* `max_age` - Session expiry time in seconds. Defaults to 2 weeks.``), a value in a table row under its
header, an example in a code block. :func:`units` cuts a chunk's text into

* **headings** (a chunk's heading path, ``#`` lines, a table's header row);
* **prose**: the sentences of a paragraph;
* **items**: a list item, whole when it is short (its sentences share the item's term), else its sentences;
* **rows**: a table row, with the header as its label (``| `timeout` | `5.0` |`` under ``| option | default |``);
* **code**: the lines of a fenced code block (an example, never quoted as a fact).

Each unit has a ``label``: what the unit is about when it does not say so itself (a list item's leading term,
a table's header). A unit that ends with a colon is a lead-in to what follows, not a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

UnitKind = Literal["heading", "prose", "item", "row", "code"]

ITEM_MAX_CHARS = 400
"""A list item up to this long is one unit; a longer one is cut into its sentences (each keeps the label)."""

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# a MyST admonition written as a fence (```{note} … ```) holds prose, not code; its options (:class: tip) are markup
_ADMONITION = re.compile(
    r"^\s*(`{3,}|~{3,})\{(note|warning|tip|hint|important|caution|attention|danger|error|seealso|admonition|topic|"
    r"versionadded|versionchanged|deprecated)\}\s*(.*?)\s*$"
)
_VERSION_WORDS = {"versionadded": "Added", "versionchanged": "Changed", "deprecated": "Deprecated"}
_DIRECTIVE_OPTION = re.compile(r"^\s*:[\w-]+:(?:\s|$)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_QUALIFIED_ROW = re.compile(r"^[^:;|`]{1,60}: [^;]+(?:; [^:;|`]{1,60}: [^;]+)+$")
"""A table row as the loaders write it, each value with its column's name (``option: timeout; default: 15``):
one unit, never cut at the sentence ends inside its cells."""
_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*+\|?\s*+:?-{2,}:?\s*+(?:\|\s*+:?-{2,}:?\s*+)*+\|?\s*+$")  # possessive: linear
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+")
# a list item's term: a leading code span, or a few words, before " - ", " – ", " — " or ": "
_ITEM_LABEL = re.compile(r"^(`[^`]+`(?:\s*\([^)]*\))?|[^\s:`][^:]{0,60}?)\s*(?:\s[-–—]\s|:\s)")
# a sentence ends at . ! ? (and closing quotes/brackets) followed by space and a capital, digit, quote or code
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[`]?[A-Z0-9`])")
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "mt", "no", "vs", "etc", "e.g", "i.e", "prof", "jr", "sr"})


_POINTER = re.compile(
    r"\W*(?:see|refer to)\s|\W*(?:for|to learn)\s+(?:more|further|additional|full|complete|the full)\b[^.;]{0,80}?,\s*see\s",
    re.I,
)


@dataclass(frozen=True)
class Unit:
    """One scored and quotable piece of a chunk."""

    text: str
    kind: UnitKind
    label: str = ""
    """What the unit is about when it does not say it: a list item's term, a table row's header."""

    @property
    def lead_in(self) -> bool:
        """A sentence that introduces what follows ("…for any responses which are not a 2xx code:")."""
        return self.text.rstrip().endswith(":")

    @property
    def link_only(self) -> bool:
        """A unit that is one Markdown link and nothing else ("[Strawberry](https://…)"): it names a page, it says
        nothing about it."""
        return _LINK_ONLY.fullmatch(self.text) is not None

    @property
    def pointer(self) -> bool:
        """A sentence that sends the reader elsewhere ("See the Library Reference for more details.", "For more
        information, see `Config`."): it says where a fact is, not the fact."""
        return _POINTER.match(self.text) is not None

    @property
    def factual(self) -> bool:
        """Whether the unit may be quoted as a fact: prose, a list item or a table row that is no lead-in, not a
        bare link and not a pointer to another page."""
        return self.kind in ("prose", "item", "row") and not (self.lead_in or self.link_only or self.pointer)

    @property
    def names_things(self) -> bool:
        """Whether the unit may be quoted for the name it gives: any factual unit, and a lead-in too ("With the
        `EventRenamer` processor, you can rename the event key:" names the processor; what follows is code)."""
        return self.kind in ("prose", "item", "row")

    @property
    def quote(self) -> str:
        """The unit as quoted: its text, preceded by its label (a list item's term, a code-named section) when the
        text does not hold it."""
        if self.kind in ("item", "prose") and self.label and self.label not in self.text:
            return f"{self.label} … {self.text}"
        return self.text


def is_heading(line: str) -> bool:
    """A short line without end punctuation: a title or a heading path (each of its ``A > B > C`` parts short), not
    the start of a wrapped sentence."""
    line = line.strip()
    return bool(line) and line[-1] not in ".!?,;:" and all(len(part.split()) <= 12 for part in line.split(" > "))


# MyST / MkDocs markup that is no text: roles ({class}`x` → `x`), directive fences (:::{note}), admonitions
# (!!! note "Title"), label targets ((labels/x)=) and attribute lists ({#anchor})
_ROLE = re.compile(r"\{[\w:-]+\}(`[^`]*`)")
_MARKUP = re.compile(
    r"^\s*(?::{3,}\s*\{[\w-]+\}\S*|:{3,}|!{3}\s*\w+(?:\s+\"[^\"]*\")?|\?{3}\+?\s*\w+(?:\s+\"[^\"]*\")?|\([\w/.-]+\)=)\s*"
)


_LINK_ONLY = re.compile(r"\s*\[[^\]\n]*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)\s*[.,;]?\s*")
_HTML_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s+[\w:-]+(?:=(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*\s*/?>")
_MIN_WORDS = 3


def _collapse(text: str) -> str:
    return " ".join(text.split())


def plain(line: str) -> str:
    """A line without MyST / MkDocs markup: roles keep their text, directive and admonition markers go."""
    return _MARKUP.sub("", _ROLE.sub(r"\1", line))


def sentences_of(text: str) -> list[str]:
    """The sentences of one paragraph (abbreviations such as "Mt." and initials do not end one)."""
    line = _collapse(text)
    out, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        before = line[start : match.start()].rsplit(" ", 1)[-1].rstrip(".").lower()
        if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
            continue  # "Mt. Arden", "J. Smith"
        out.append(line[start : match.start()].strip())
        start = match.end()
    out.append(line[start:].strip())
    return [s for s in out if s]


def _item_units(lines: list[str]) -> list[Unit]:
    text = _collapse(_ITEM.sub("", lines[0], count=1) + " " + " ".join(lines[1:]))
    match = _ITEM_LABEL.match(text)
    label = match.group(1).strip() if match else ""
    if len(text) <= ITEM_MAX_CHARS:
        return [Unit(text, "item", label)] if text else []
    return [Unit(s, "item", label) for s in sentences_of(text)]


def _prose_units(lines: list[str]) -> list[Unit]:
    text = " ".join(lines)
    if _HTML_TAG.search(text):
        bare = _HTML_TAG.sub(" ", text)
        if len(re.findall(r"\w+", bare)) < _MIN_WORDS:
            return [Unit(_collapse(text), "code")]  # raw HTML (a logo, a badge, a link bar): markup, not a sentence
        text = bare  # text around inline HTML (a logo before the tagline): the words, not the tags
    return [Unit(s.lstrip("#*-+ ").strip(), "prose") for s in sentences_of(text) if s.lstrip("#*-+ ")]


class _Reader:
    """Walks a chunk's lines once, turning blocks into units."""

    def __init__(self) -> None:
        self.out: list[Unit] = []
        self.block: list[str] = []
        self.kind: UnitKind = "prose"
        self.fence = ""
        self.admonition = ""
        """The fence of the MyST admonition being read (its lines are prose), or ""."""
        self.header = ""
        self.last_row = ""

    def flush(self) -> None:
        if self.block:
            self.out += _item_units(self.block) if self.kind == "item" else _prose_units(self.block)
        self.block, self.kind = [], "prose"

    def code(self, line: str) -> None:
        if _FENCE.match(line) and line.strip().startswith(self.fence):
            self.fence = ""
        elif line.strip():
            self.out.append(Unit(line.strip(), "code"))

    def row(self, line: str) -> None:
        self.flush()
        if _TABLE_RULE.match(line):
            if self.last_row and self.out and self.out[-1].text == self.last_row:
                self.out[-1] = Unit(self.last_row, "heading")  # the row above the rule is the header
                self.header = self.last_row
            return
        self.last_row = _collapse(line)
        self.out.append(Unit(self.last_row, "row", self.header))

    def open_admonition(self, fence: str, name: str, argument: str) -> None:
        """Read a MyST admonition's lines as prose: a version directive's argument becomes a sentence ("Added in
        version 22.0."), an admonition's title a heading."""
        self.admonition = fence
        if name in _VERSION_WORDS and argument:
            self.block = [f"{_VERSION_WORDS[name]} in version {argument}."]
        elif argument:
            self.out.append(Unit(_collapse(argument), "heading"))

    def line(self, line: str) -> None:
        if self.fence:
            return self.code(line)
        line = plain(line)
        if fence := _FENCE.match(line):
            self.flush()
            if self.admonition and line.strip() == self.admonition:
                self.admonition = ""  # the admonition ends; its prose was read like any paragraph
            elif (note := _ADMONITION.match(line)) and not self.admonition:
                self.open_admonition(note.group(1), note.group(2), note.group(3))
            else:
                self.fence = fence.group(1)[0] * 3
            return None
        if self.admonition and _DIRECTIVE_OPTION.match(line):
            return None
        if not line.strip():
            return self.flush()
        if _ROW.match(line):
            return self.row(line)
        self.header = self.last_row = ""
        if _QUALIFIED_ROW.match(line.strip()):
            self.flush()
            self.out.append(Unit(_collapse(line), "row"))
            return None
        if _ATX.match(line):
            self.flush()
            self.out.append(Unit(_collapse(_ATX.sub("", line)).rstrip("#").strip(), "heading"))
        elif _ITEM.match(line):
            self.flush()
            self.kind, self.block = "item", [line]
        else:
            self.block.append(line)
        return None


def units(text: str) -> list[Unit]:
    """The units of a chunk's text, in order (see the module docstring)."""
    return list(_units(text))


@lru_cache(maxsize=4096)
def _units(text: str) -> tuple[Unit, ...]:
    """:func:`units`, parsed once per chunk text: one question scores the same chunks for relevance,
    refinement, the extractive answer and the draft's checks."""
    reader = _Reader()
    lines = text.strip().split("\n")
    first = plain(lines[0])
    if len(lines) > 1 and is_heading(first) and not any(p.match(first) for p in (_FENCE, _ITEM, _ROW)):
        heading = _collapse(first).lstrip("#*-+ ").strip()  # the chunk's heading path ("Title > Section")
        if heading:
            reader.out.append(Unit(heading, "heading"))
        lines = lines[1:]
    for line in lines:
        reader.line(line)
    reader.flush()
    return tuple(u for u in reader.out if u.text)
