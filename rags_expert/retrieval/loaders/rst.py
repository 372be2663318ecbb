"""reStructuredText (``rst`` extra): parsed by docutils, the reference parser, and written out as Markdown.

Sections become headings (so chunks carry their heading path); paragraphs, lists, definition and field lists
(``:param timeout: seconds`` → ``param timeout: seconds``), admonitions (``Note:`` and their body) and tables
(a line per row with its column names, the table's title a heading) keep their visible text; literal and code
blocks stay code. Sphinx's roles, which plain docutils does not know (``:func:`x```), show their text
(:func:`rags_expert.retrieval.loaders.markup.role_text`); Sphinx's directives show their arguments and body
(``.. versionadded:: 2.0`` → ``New in version 2.0``; ``.. function:: get(url)`` → a heading ``get`` one level
below its section, its signature as code, then its body), code directives stay code, and tables of contents, includes and autodoc directives are dropped.
File insertion (``.. include::``, ``:file:`` options) and raw passthrough are disabled: a document never reads
another file.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rags_expert.retrieval.loaders.base import EmptyFileError, TextUnit, decode, shown_path
from rags_expert.retrieval.loaders.roles import (
    CODE_ROLES,
    DESCRIPTIONS,
    DROPPED_DIRECTIVES,
    LABELS,
    description_head,
    description_name,
    directive_short,
    label_text,
    role_text,
)
from rags_expert.retrieval.loaders.tables import label_line, table_text

CODE_DIRECTIVES = frozenset(
    {
        "code-block",
        "sourcecode",
        "code",
        "doctest",
        "testcode",
        "testoutput",
        "ipython",
        "jupyter-execute",
        "prompt",
        "parsed-literal",
        "code-tab",
    }
)
"""Sphinx directives whose body is code (also an extension's ``click:example``/``click:run``: the part after the
last colon counts; sphinx-tabs' ``code-tab``, whose argument is the language, then the tab's label)."""
_ROLE = re.compile(r"^:(?P<role>[\w.+:-]+):`(?P<text>.*)`$", re.DOTALL)


def _parse(text: str, source: str) -> Any:
    """The docutils doctree of ``text``: no file insertion, no raw passthrough, no messages printed."""
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    parser = Parser()
    settings = get_default_settings(parser)
    settings.report_level = 5
    settings.halt_level = 5
    settings.warning_stream = io.StringIO()
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.syntax_highlight = "none"
    settings.character_level_inline_markup = False
    document = new_document(source, settings)
    parser.parse(text, document)
    return document


def rst_to_markdown(text: str, source: str = "<rst>", depth: int = 0, section: str = "") -> str:
    """A reStructuredText text as Markdown: headings, visible text, tables as row lines, code fenced. ``section``:
    the title of the heading (at level ``depth``) the text sits under, as a MyST page's ``eval-rst`` block sits
    under its Markdown heading; an object description opens a heading below it only then (:meth:`_Writer._description`)."""
    writer = _Writer(depth)
    writer.titles = [section] if section else []
    return "\n".join(writer.blocks(_parse(text, source))).strip() + "\n"


def rst_title(document: Any) -> str:
    """The visible text of a document's first section title, roles reduced as in the body ('' if none)."""
    from docutils import nodes

    for node in document.findall(nodes.title):
        return " ".join(_Writer(0).inline(node).split())
    return ""


_INCLUDE = re.compile(r"^\s*\.\.\s+(?:literal)?include::", re.MULTILINE)
"""An include directive: a page of nothing else has no text of its own (:func:`load_rst`)."""


def load_rst(path: Path, data: bytes) -> list[TextUnit]:
    """reStructuredText: one unit of Markdown (:func:`rst_to_markdown`), titled by its first heading. A page that
    only includes other files has no text of its own: :class:`EmptyFileError` says so (an include is never followed,
    so that a document never reads another file)."""
    text = decode(data, path)
    document = _parse(text, str(path))
    body = "\n".join(_Writer(0).blocks(document)).strip()
    if not body and _INCLUDE.search(text):
        raise EmptyFileError(f"{shown_path(path)}: no text to index, only includes of other files (never followed)")
    return [TextUnit(text=body, title=rst_title(document) or path.stem)]


class _Writer:
    """Writes a doctree as Markdown blocks (lists of lines separated by blank lines)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.titles: list[str] = []
        """The titles of the sections being written (a captioned table's heading is closed by the last)."""

    def blocks(self, node: Any) -> Iterator[str]:
        """The Markdown lines of ``node``'s children, a blank line after each block."""
        for child in node.children:
            yield from self.block(child)

    def block(self, node: Any) -> Iterator[str]:
        """The Markdown lines of one block-level node."""
        from docutils import nodes

        name = type(node).__name__
        handler = getattr(self, f"_{name}", None)
        if handler is not None:
            yield from handler(node)
        elif isinstance(node, (nodes.Invisible, nodes.transition, nodes.substitution_definition)):
            return
        elif isinstance(node, nodes.TextElement):
            text = self.inline(node)
            if text.strip():
                yield text
                yield ""
        elif isinstance(node, nodes.Element):
            yield from self.blocks(node)

    def inline(self, node: Any) -> str:
        """The visible text of an inline node and its children (literals in code spans, roles reduced)."""
        from docutils import nodes

        if isinstance(node, nodes.Text):
            return str(node)
        if isinstance(node, nodes.literal):
            return code_span(node.astext())
        if isinstance(node, nodes.problematic):
            return _problem_text(node.astext())
        if isinstance(node, (nodes.footnote_reference, nodes.citation_reference, nodes.system_message)):
            return ""
        if isinstance(node, nodes.image):
            return str(node.get("alt", ""))
        if isinstance(node, nodes.substitution_reference):
            definition = node.document.substitution_defs.get(node.get("refname", "")) if node.document else None
            return self.inline(definition) if definition is not None else node.astext()
        return "".join(self.inline(child) for child in node.children)

    def _section(self, node: Any) -> Iterator[str]:
        """A section: its title as a heading one level below its parent's, then its body."""
        from docutils import nodes

        self.depth += 1
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        shown = " ".join(self.inline(title).split()) if title is not None else ""
        if shown:
            yield f"{'#' * min(6, self.depth)} {shown}"
            yield ""
        self.titles.append(shown)
        for child in node.children:
            if child is not title:
                yield from self.block(child)
        self.titles.pop()
        self.depth -= 1

    def _title(self, node: Any) -> Iterator[str]:
        """A title outside a section (a topic's, a sidebar's): a line of its own."""
        yield " ".join(self.inline(node).split())
        yield ""

    def _literal_block(self, node: Any) -> Iterator[str]:
        """Code: a fence with its language (the classes docutils and Sphinx give it)."""
        classes = [c for c in node.get("classes", []) if c != "code"]
        language = node.get("language") or (classes[0] if classes else "")
        text = node.astext()
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        yield f"{fence}{language}"
        yield from text.split("\n")
        yield fence
        yield ""

    _doctest_block = _literal_block

    def _bullet_list(self, node: Any) -> Iterator[str]:
        """Items as ``- `` lines, their later lines indented."""
        yield from self._items(node, lambda index: "- ")

    def _enumerated_list(self, node: Any) -> Iterator[str]:
        """Items as ``1. `` lines, their later lines indented."""
        start = int(node.get("start", 1))
        yield from self._items(node, lambda index: f"{start + index}. ")

    def _items(self, node: Any, marker: Any) -> Iterator[str]:
        """A list's items, each marked and its continuation lines indented under it."""
        for index, item in enumerate(node.children):
            lines = [line for line in self.blocks(item)]
            while lines and not lines[-1].strip():
                lines.pop()
            mark = marker(index)
            for number, line in enumerate(lines):
                yield (mark + line) if number == 0 else (" " * len(mark) + line if line.strip() else "")
        yield ""

    def _definition_list(self, node: Any) -> Iterator[str]:
        """``term: definition`` (a glossary, options), one paragraph each."""
        from docutils import nodes

        for item in node.children:
            term = " ".join(self.inline(c) for c in item.children if isinstance(c, (nodes.term, nodes.classifier)))
            body = [c for c in item.children if isinstance(c, nodes.definition)]
            yield from self._named(" ".join(term.split()), body)

    def _field_list(self, node: Any) -> Iterator[str]:
        """``name: body`` per field (``:param timeout: seconds`` → ``param timeout: seconds``)."""
        from docutils import nodes

        for field in node.children:
            name = next((c for c in field.children if isinstance(c, nodes.field_name)), None)
            body = [c for c in field.children if isinstance(c, nodes.field_body)]
            yield from self._named(" ".join(self.inline(name).split()) if name is not None else "", body)

    def _option_list(self, node: Any) -> Iterator[str]:
        """``--option ARG: description`` per option."""
        from docutils import nodes

        for item in node.children:
            group = next((c for c in item.children if isinstance(c, nodes.option_group)), None)
            names = ", ".join(c.astext() for c in group.children) if group is not None else ""
            yield from self._named(names, [c for c in item.children if isinstance(c, nodes.description)])

    def _named(self, name: str, bodies: list[Any]) -> Iterator[str]:
        """A name and its body: ``name: first line`` and the body's other lines after it."""
        lines = [line for body in bodies for line in self.blocks(body)]
        while lines and not lines[-1].strip():
            lines.pop()
        first = lines[0] if lines else ""
        yield f"{name}: {first}" if name and first else name or first
        yield from lines[1:]
        yield ""

    def _admonition(self, node: Any) -> Iterator[str]:
        """An admonition: its title or its kind ("Note:") on a line, then its body."""
        from docutils import nodes

        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        label = " ".join(self.inline(title).split()) if title is not None else type(node).__name__.capitalize()
        yield f"{label}:"
        yield ""
        for child in node.children:
            if child is not title:
                yield from self.block(child)

    _note = _warning = _tip = _hint = _important = _caution = _danger = _error = _attention = _admonition

    def _table(self, node: Any) -> Iterator[str]:
        """A table: its title a heading one level down, then a line per row with the header's names; a table
        without a header row (no ``===`` line under its first row) is a list of "label: value" rows: Sphinx docs use
        one to name things and say what each is (``:class:`group` | group tasks together``)."""
        from docutils import nodes

        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        if title is not None:
            yield f"{'#' * min(6, self.depth + 1)} {' '.join(self.inline(title).split())}"
            yield ""
        header: list[str] | None = None
        rows: list[list[str]] = []
        for group in node.findall(nodes.tgroup):
            for part in group.children:
                for row in part.children if isinstance(part, (nodes.thead, nodes.tbody)) else []:
                    cells = [" ".join(" ".join(self.blocks(entry)).split()) for entry in row.children]
                    if isinstance(part, nodes.thead) and header is None:
                        header = cells
                    else:
                        rows.append(cells)
        if header is None:  # no header row: each row is named by its first cell
            yield "\n\n".join(line for line in map(label_line, rows) if line)
        else:
            yield table_text(rows, header)
        yield ""
        if title is not None and self.titles and self.titles[-1]:  # what follows the table is the section's again
            yield f"{'#' * min(6, self.depth)} {self.titles[-1]}"
            yield ""

    def _system_message(self, node: Any) -> Iterator[str]:
        """A directive docutils does not know (Sphinx's): its text as Sphinx shows it; other messages: nothing."""
        from docutils import nodes

        message = node.children[0].astext() if node.children else ""
        if not message.startswith("Unknown directive type"):
            return
        block = next(iter(node.findall(nodes.literal_block)), None)
        if block is not None:
            yield from self._directive(block.astext(), isinstance(node.parent, (nodes.section, nodes.document)))

    def _directive(self, source: str, top: bool = False) -> Iterator[str]:
        """An unknown directive's source reduced: code fenced, descriptions (:meth:`_description`), labels, or its
        argument and body; tables of contents, includes and autodoc dropped. ``top``: the directive is a block of
        a section (not of a list item or an admonition), where a description may open a heading."""
        head, _, rest = source.partition("\n")
        found = re.match(r"\.\.\s+([\w:.+-]+)\s*::\s*(.*)", head)
        if found is None:
            return
        name, argument = found.group(1).lower(), found.group(2).strip()
        body_lines = textwrap.dedent(rest).split("\n")
        continued = []
        while body_lines and body_lines[0].strip() and not body_lines[0].startswith(":"):  # a long argument
            continued.append(body_lines.pop(0).strip())
        options: dict[str, str] = {}
        while body_lines and (option := re.match(r"^:([\w-]+):\s*(.*)", body_lines[0])):  # the directive's options
            options[option.group(1).lower()] = option.group(2).strip()
            body_lines.pop(0)
        body = "\n".join(body_lines).strip()
        short = directive_short(name)
        if short in DROPPED_DIRECTIVES or short.startswith("auto"):
            return
        if short in CODE_DIRECTIVES:
            language = argument.split()[0] if argument and short != "parsed-literal" else ""  # code-tab: then a label
            yield from self._literal_block_text(body, language)
            return
        argument = " ".join([argument, *continued]).strip()
        if DESCRIPTIONS.fullmatch(name):
            yield from self._description(argument, options, body, top)
            return
        if short in LABELS:
            yield label_text(short, argument, rst_to_markdown, bool(body))
        elif argument:
            yield " ".join(rst_to_markdown(argument).split())
        yield ""
        if body:
            yield from rst_to_markdown(body, depth=self.depth).split("\n")
            yield ""

    def _description(self, signature: str, options: dict[str, str], body: str, top: bool) -> Iterator[str]:
        """A Sphinx object description (``.. py:data:: DEBUG``, ``.. confval:: timeout``): at the top of a titled
        section a heading one level below it, named by the signature up to its parameters, so that the description's lines
        ("Default: ``False``") sit under the object's name; then the signature as code (unless it is the name), the options Sphinx shows
        (:data:`~rags_expert.retrieval.loaders.roles.SHOWN_OPTIONS`), the body (nested descriptions one level further down), and the section's heading
        again for what follows. Inside a list or an admonition, or outside any titled section: the signature as code,
        then the body."""
        name = description_name(signature)
        heading = top and bool(name) and bool(self.titles and self.titles[-1])  # under a section it can close
        if heading:
            self.depth += 1
        yield from description_head(signature, options, rst_to_markdown, self.depth if heading else 0)
        if body:
            writer = _Writer(self.depth)
            writer.titles = [*self.titles, name] if heading else list(self.titles)
            yield from writer.blocks(_parse(body, "<rst>"))
        if heading:  # the section's own text goes on under its heading
            self.depth -= 1
            yield f"{'#' * min(6, self.depth)} {self.titles[-1]}"
            yield ""

    def _literal_block_text(self, text: str, language: str) -> Iterator[str]:
        """A code fence of ``text`` in ``language``."""
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        yield f"{fence}{language}"
        yield from text.split("\n")
        yield fence
        yield ""

    def _comment(self, node: Any) -> Iterator[str]:
        """A comment: nothing."""
        return iter(())

    def _substitution_definition(self, node: Any) -> Iterator[str]:
        """A substitution's definition: nothing (its uses show its text)."""
        return iter(())


def code_span(text: str) -> str:
    """``text`` as a Markdown code span: fenced by one backtick more than its longest run of backticks, with a space
    inside the fence when it starts or ends with one (``:func:`x``` → ````` ``:func:`x``` `````), as CommonMark reads it."""
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _problem_text(raw: str) -> str:
    """The text of an inline construct docutils could not resolve: a Sphinx role's text, else the raw text."""
    found = _ROLE.match(raw)
    if found is None:
        return raw.strip("|`")
    shown = role_text(found.group("role"), found.group("text"))
    return f"`{shown}`" if CODE_ROLES.fullmatch(found.group("role")) else shown
