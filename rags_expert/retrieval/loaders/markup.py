"""Docs-site Markdown reduced to what its rendered page shows, before chunking.

A site generator's markup is not what a page says, and left in a chunk it is noise to a retriever and to a model
quoting it. Code (fenced, or indented outside the blocks below) is never touched. Reduced:

* front matter (YAML ``---``, TOML ``+++``): removed (the title is read before);
* MkDocs/Python-Markdown admonitions ``!!! note "Title"``, collapsible details ``???``/``???+`` and content
  tabs ``=== "Tab"``: the title (or the type: "Note") as a line, the indented body dedented;
* pymdownx blocks ``/// note | Title`` … ``///``, Docusaurus ``:::note Title`` … ``:::`` and MyST colon fences
  ``:::{note}`` … ``:::``: the title, then the body;
* MyST/Sphinx directive fences ```` ```{note} ````: the argument line, else an admonition's name ("Note"), then
  the body, as written (options ``:class: x`` and a ``---`` YAML options block dropped; a project's own directive
  keeps its words);
  ```` ```{code-block} python ```` stays a code fence; ``{toctree}``/``{include}``-like ones are dropped;
  ``{versionadded} 0.10``/``{versionchanged}``/``{deprecated}``/``{seealso}`` read as Sphinx words them ("New in
  version 0.10: " and the first paragraph), in the words the rst loader uses (:func:`~.roles.label_text`);
* Hugo/Docusaurus shortcodes ``{{% note %}}`` … ``{{% /note %}}`` and ``{{< x >}}``: the tags removed, their
  body kept, a ``title``/``caption`` argument kept as text;
* MDX: ``import``/``export`` lines dropped, component tags (``<Tabs>``, ``<TabItem label="Py">``) replaced by
  their label or title;
* footnotes: ``[^1]: text`` → ``1. text``, a reference ``[^1]`` removed;
* GitHub alerts (a block quote opened by ``> [!NOTE]``, ``[!TIP]``, ``[!IMPORTANT]``, ``[!WARNING]``,
  ``[!CAUTION]``): the type as a title ("Note"), then the quote's body without its ``>`` marks;
* reference-style links ``[text][ref]``, ``[text][]`` and images ``![alt][ref]``: their text (````[`Data`][]```` →
  ```Data```);
* include lines (``--8<-- "file.md"``, ``{!file.md!}``), reference-style link definitions (``[id]: url``),
  lone attribute lists (``{ .annotate }``), MyST targets (``(label)=``) and icon shortcodes (``:material-check:``): removed;
* inline MyST roles ``{func}`x``` and reST roles ``:func:`x```: their text (``x``, ``~a.b`` → ``b``,
  ``title <target>`` → ``title``); inline code spans (```${VAR}```, ```{name}```) are never touched, found as
  CommonMark finds them (:func:`_outside_code_spans`);
* pipe tables: one line per row with its column names (:mod:`rags_expert.retrieval.loaders.tables`).
"""

from __future__ import annotations

import bisect
import re
import textwrap
from collections.abc import Callable
from contextvars import ContextVar

from rags_expert.retrieval.loaders.roles import (
    ADMONITIONS,
    CODE_DIRECTIVES,
    CODE_ROLES,
    DESCRIPTIONS,
    DROPPED_DIRECTIVES,
    LABELS,
    VERSION_DIRECTIVES,
    description_head,
    directive_short,
    label_text,
    role_text,
)
from rags_expert.retrieval.loaders.tables import table_text

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_ADMONITION = re.compile(
    r"""^(?P<indent>[ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]*(?P<type>[\w-]+)(?P<rest>.*)|===[+!]?[ \t]+(?P<tab>"[^"]*"|'[^']*')[ \t]*)$"""
)
_QUOTED = re.compile(r"""["'](.*?)["']""")
_COLON_OPEN = re.compile(
    r"^[ \t]*(?P<colons>:{3,})[ \t]*(?:\{(?P<directive>[\w:.+-]+)\}|(?P<type>[\w-]+))(?P<rest>.*)$"
)
_COLON_CLOSE = re.compile(r"^[ \t]*:{3,}[ \t]*$")
_SLASH_OPEN = re.compile(r"^[ \t]*/{3,}[ \t]*(?P<type>[\w-]+)[ \t]*(?:\|[ \t]*(?P<title>.*))?$")
_SLASH_CLOSE = re.compile(r"^[ \t]*/{3,}[ \t]*$")
_SHORTCODE = re.compile(r"\{\{[<%](?P<body>(?:[^{\n]|\{(?!\{))*?)[%>]\}\}")
"""A shortcode tag, ``{{< name args >}}`` or ``{{% /name %}}``: its body (with the ``/``, ``*`` and spaces around
it) never holds ``{{``, so an unclosed opener is given up at the next one (a line of openers is read once)."""
_SHORTCODE_TITLE = re.compile(r"""\b(?:title|caption|header|summary|label)\s*=\s*["']([^"']+)["']""")
_MDX_LINE = re.compile(
    r"^[ \t]*(?:import\s.+\sfrom\s.+|import\s+['\"].+|export\s+(?:default\s+)?(?:const|function|let)\b.*)$"
)
_MDX_TAG = re.compile(r"^[ \t]*<(?P<close>/)?(?P<name>[A-Z][\w.]*)(?P<attrs>(?:\s[^<>]*)?)/?>[ \t]*$")
_INCLUDE = re.compile(r"""^[ \t]*(?:-{1,2}8<-{1,2}(?:[ \t]+["'].*["'])?|\{!.*!\})[ \t]*$""")
_LINK_DEFINITION = re.compile(r"^[ ]{0,3}\[(?!\^)[^\]]+\]:[ \t]*\S+.*$")
_FOOTNOTE_DEFINITION = re.compile(r"^(?P<indent>[ ]{0,3})\[\^(?P<name>[^\]]+)\]:[ \t]*")
_FOOTNOTE_REFERENCE = re.compile(r"\[\^[^\[\]\s]+\](?!:)")
_ALERT = re.compile(r"^[ ]{0,3}>[ \t]?\[!(?P<type>note|tip|important|warning|caution)\][ \t]*(?P<rest>.*)$", re.I)
_QUOTE_MARK = re.compile(r"^[ ]{0,3}>[ ]?")
_REFERENCE_LINK = re.compile(r"(?<![\w\\\]])!?\[(?P<text>[^\[\]`]*)\]\[[^\[\]`]*\]")
"""``[text][ref]``, ``[text][]``, ``![alt][ref]`` in prose (not ``a[i][j]``): each class stops at the next bracket, so
every character is read a bounded number of times."""
_CODE_REFERENCE_LINK = re.compile(r"(?<![\w\\\]])\[(?P<code>`[^`\[\]]+`)\]\[[^\[\]`]*\]")
"""A reference link whose text is one code span (````[`Data`][]````, mkdocstrings' cross-references)."""
_MYST_TARGET = re.compile(r"^[ \t]*\([\w.:-]+\)=[ \t]*$")
_ATTRIBUTE_LINE = re.compile(r"^[ \t]*\{:?[ \t]*[#.][^{}]*\}[ \t]*$")
_ICON = re.compile(r":(?:material|fontawesome|octicons|simple|fa)-[\w-]+:(?:\{[^{}]*\})?")
_ROLE_PREFIX = re.compile(r"(?:\{(?P<myst>[\w:.+-]+)\}|(?<![\w`]):(?P<rst>[\w.+-]+(?::[\w.+-]+)*):)\Z")
ROLE_NAME_CHARS = 100
"""The most characters of a role's name and its marks (``{py:func}``, ``:py:meth:``) looked at before a code span:
a role is searched for only there, so a long line of colons is not searched again for each code span."""
_TICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_FENCE_LINE = re.compile(r"^[ \t]*+(?:`{3}|~{3})")
_FENCE_CLOSE = re.compile(r"^[ \t]*+(?:`{3,}+|~{3,}+)[ \t]*+$")
_OPTION = re.compile(r"^[ \t]*:([\w-]+):(?:[ \t]+(.*)|$)")
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]++(.+)")
"""A page's ATX heading: its level and title, with its closing ``#`` (:func:`_heading`)."""
_NOT_PARAGRAPH = re.compile(r"^(?:[ ]{4}|\t|[ ]{0,3}(?:[-*+][ \t]|\d+[.)][ \t]|#|>|`{3}|~{3}|\|))")
_TABLE_DELIMITER = re.compile(r"^[ \t]*+\|?[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t]*+$")
MAX_NESTING = 16
"""Blocks (admonitions, directives, ``:::`` and ``///`` blocks) reduced inside one another at most: each level
reads the rest of its block again, so an unclosed opener on each of 20,000 lines would cost 20,000 readings."""
_NESTING: ContextVar[int] = ContextVar("markup_nesting", default=0)
_FRONT_MATTER = {"---": re.compile(r"^(?:---|\.\.\.)[ \t]*$"), "+++": re.compile(r"^\+\+\+[ \t]*$")}


def reduce_inline(line: str) -> str:
    """A line's roles reduced to their text, and its footnote marks, shortcodes and icons outside code spans
    removed; code spans (```${VAR}```, ```{name}```) are kept as written."""
    line = _FOOTNOTE_DEFINITION.sub(lambda m: f"{m.group('indent')}{m.group('name')}. ", line)
    line = _CODE_REFERENCE_LINK.sub(r"\g<code>", line)
    return _outside_code_spans(line, _reduce_prose)


def _reduce_prose(text: str) -> str:
    """Text outside code spans and roles without its footnote references, shortcodes and icons."""
    text = _REFERENCE_LINK.sub(r"\g<text>", _FOOTNOTE_REFERENCE.sub("", text))
    return _ICON.sub("", _SHORTCODE.sub(lambda m: _shortcode_text(m.group("body")), text))


def _outside_code_spans(text: str, prose: Callable[[str], str]) -> str:
    """``text`` with its roles (``{func}`x```, ``:func:`x```) reduced, its code spans kept as written and ``prose``
    applied to the rest. Code spans are found as CommonMark finds them, left to right: a run of backticks closes at
    the next run of the same length in the same paragraph, and a run that never closes is a literal backtick; a
    role is a code span right after ``{name}`` or ``:name:``. So ``{x}`` inside a code span is never a role's name
    and backticks never pair up across a code span."""
    if "`" not in text:
        return prose(text)
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    breaks = [m.start() for m in _BLANK_LINE.finditer(text)]
    closers: list[int | None] = [None] * len(runs)  # the run closing each one: the next of its length in its paragraph
    later: dict[tuple[int, int], int] = {}
    for index in range(len(runs) - 1, -1, -1):
        start, end = runs[index]
        key = (bisect.bisect_right(breaks, start), end - start)
        closers[index], later[key] = later.get(key), index
    out: list[str] = []
    done = index = 0
    while index < len(runs):
        closer = closers[index]
        if closer is None:  # a literal backtick run
            index += 1
            continue
        (start, end), (close, after) = runs[index], runs[closer]
        role = _ROLE_PREFIX.search(text, max(done, start - ROLE_NAME_CHARS), start)
        out.append(prose(text[done : role.start() if role else start]))
        if role:
            out.append(_role(role.group("myst") or role.group("rst"), text[end:close]))
        else:
            out.append(text[start:after])
        done, index = after, closer + 1
    out.append(prose(text[done:]))
    return "".join(out)


def _role(role: str, text: str) -> str:
    """A role's text, in a code span when it names code (``:func:``, ``{class}``)."""
    shown = role_text(role, text)
    return f"`{shown}`" if CODE_ROLES.fullmatch(role) else shown


def _shortcode_text(body: str) -> str:
    """What a shortcode shows: its ``title``/``caption`` argument, else nothing."""
    found = _SHORTCODE_TITLE.search(body)
    return found.group(1) if found else ""


def _front_matter_end(lines: list[str]) -> int:
    """The number of lines of a leading YAML (``---``) or TOML (``+++``) front matter (0: none)."""
    if not lines or lines[0].rstrip() not in _FRONT_MATTER:
        return 0
    closer = _FRONT_MATTER[lines[0].rstrip()]
    for index in range(1, len(lines)):
        if closer.match(lines[index]):
            return index + 1
    return 0


def _indent(line: str) -> int:
    """Columns of a line's leading whitespace (a tab counts 4)."""
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _indented_body(lines: list[str], start: int, indent: int) -> tuple[list[str], int]:
    """The lines from ``start`` indented deeper than ``indent`` (blank ones among them), dedented by 4 columns
    past ``indent``, and the index after them."""
    end, body = start, []
    while end < len(lines):
        line = lines[end]
        if line.strip() and _indent(line) <= indent:
            break
        body.append(line)
        end += 1
    while body and not body[-1].strip():
        body.pop()
        end -= 1
    cut = indent + 4
    return [ln.expandtabs(4)[cut:] if _indent(ln) >= cut else ln.lstrip() for ln in body], end


def _title(kind: str, rest: str) -> str:
    """An admonition's shown title: its quoted title, else its type capitalised ('' for an empty title)."""
    quoted = _QUOTED.search(rest)
    if quoted:
        return quoted.group(1).strip()
    rest = rest.strip()
    if rest and not rest.startswith(("{", "|")):
        return rest
    return kind.replace("-", " ").capitalize()


def _closing(lines: list[str], start: int, pattern: re.Pattern[str], colons: int = 0) -> int:
    """The index of the line closing a block opened before ``start`` (nested openers counted), or len(lines)."""
    depth = 0
    for index in range(start, len(lines)):
        line = lines[index]
        if (
            pattern is _COLON_CLOSE
            and (opened := _COLON_OPEN.match(line))
            and len(opened.group("colons")) >= colons
            or pattern is _SLASH_CLOSE
            and _SLASH_OPEN.match(line)
        ):
            depth += 1
        elif pattern.match(line) and (not colons or line.strip().count(":") >= colons):
            if depth == 0:
                return index
            depth -= 1
    return len(lines)


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """The index of the line closing the fence opened at ``start`` (len(lines) when never closed)."""
    closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
    for index in range(start + 1, len(lines)):
        if closer.match(lines[index]):
            return index
    return len(lines)


def _directive(
    lines: list[str], start: int, opened: re.Match[str], section: tuple[int, str] | None = None
) -> tuple[list[str], int]:
    """A MyST directive fence (```` ```{name} args ````) reduced, and the index after it; ``section``: the heading
    (level, title) it sits under, if known."""
    end = _fence_end(lines, start, opened.group("fence"))
    name_args = re.match(r"\{([\w:.-]+)\}[ \t]*(.*)", opened.group("info").strip())
    assert name_args is not None
    fence = (opened.group("indent"), opened.group("fence"))
    return _myst(name_args.group(1), name_args.group(2).strip(), lines[start + 1 : end], fence, section), end + 1


def _myst(
    name: str,
    args: str,
    body: list[str],
    fence: tuple[str, str] = ("", "```"),
    section: tuple[int, str] | None = None,
) -> list[str]:
    """A MyST directive (a backtick or colon fence) as a reader sees it: dropped (a table of contents), code,
    reStructuredText (``eval-rst``) converted, a glossary's definitions, a label (``{versionadded}``), or its
    argument line then its body, as written; only an admonition with no title shows its name ("Note"). A
    directive this loader does not know (a project's own ``{settingtabs} cache.size 64``) keeps its argument line
    and body text: only the fence and the options (``:key: value`` lines, a ``---`` YAML block) go. An object
    description (``{py:data} DEBUG``) under a known ``section`` heading is a heading below it (:func:`_description`)."""
    options, body = _options(body)
    short = directive_short(name)
    if short in DROPPED_DIRECTIVES:
        return []
    if short in CODE_DIRECTIVES:
        return [f"{fence[0]}{fence[1]}{args}", *body, f"{fence[0]}{fence[1]}"]
    if section is not None and args and DESCRIPTIONS.fullmatch(name.lower()):
        return _description(args, options, body, section)
    if short == "eval-rst":
        return _eval_rst(body, section)
    if short == "glossary":
        return [*reduce_lines(_glossary(body)), ""]
    if short in LABELS:
        return _labelled(short, args, body)
    if args:
        return [reduce_inline(args).strip(), "", *reduce_lines(body), ""]
    if short in ADMONITIONS:
        return [short.capitalize(), "", *reduce_lines(body), ""]
    return ["", *reduce_lines(body), ""]


def _description(signature: str, options: dict[str, str], body: list[str], section: tuple[int, str]) -> list[str]:
    """A MyST object description as the rst loader writes one (:func:`~rags_expert.retrieval.loaders.roles.description_head`):
    a heading one level below ``section`` (level, title), the signature, the ``options`` Sphinx shows, the ``body``,
    then ``section``'s heading again for what follows."""
    level, title = section
    head = description_head(signature, options, reduce_inline, level + 1)
    return [*head, *reduce_lines(body), "", f"{'#' * level} {title}", ""]


def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A MyST directive's options (leading ``:key: value`` lines, keys lower-cased; ``:func:`x` …`` is text) and its
    body without them; a leading YAML block between ``---`` lines is dropped and gives no options."""
    if body and body[0].strip() == "---":
        end = next((i for i in range(1, len(body)) if body[i].strip() == "---"), None)
        if end is not None:
            return {}, body[end + 1 :]
    options = {}
    while body and (option := _OPTION.match(body[0])):
        options[option.group(1).lower()] = (option.group(2) or "").strip()
        body = body[1:]
    return options, body


def _labelled(name: str, args: str, body: list[str]) -> list[str]:
    """A directive Sphinx shows with a label (:data:`~rags_expert.retrieval.loaders.roles.LABELS`), as Sphinx shows
    it: ``{versionadded} 0.10`` → "New in version 0.10:" at the start of its first paragraph (when the body starts
    with one and the argument has no words after the version), "New in version 0.10." when nothing follows,
    ``{seealso}`` → "See also:" above its body."""
    shown = reduce_lines(body)
    while shown and not shown[0].strip():
        shown = shown[1:]
    label = label_text(name, args, reduce_inline, bool(shown))
    if name in VERSION_DIRECTIVES and label.endswith(":") and shown and not _NOT_PARAGRAPH.match(shown[0]):
        return [f"{label} {shown[0]}", *shown[1:], ""]
    return [label, "", *shown, ""]


def _eval_rst(body: list[str], section: tuple[int, str] | None = None) -> list[str]:
    """An ``eval-rst`` block's reStructuredText as Markdown (:mod:`~rags_expert.retrieval.loaders.rst`), under the
    heading ``section`` (level, title) it sits in (an object description, ``.. confval:: build-dir``, is a heading
    one level below it); without docutils (the ``rst`` extra), its lines with roles reduced."""
    try:
        from rags_expert.retrieval.loaders.rst import rst_to_markdown

        level, title = section or (0, "")
        text = rst_to_markdown(textwrap.dedent("\n".join(body)), depth=level, section=title)
        return ["", *text.split("\n"), ""]
    except ImportError:
        return reduce_lines(body)


def _glossary(body: list[str]) -> list[str]:
    """A glossary's lines (terms at the margin, definitions indented under them) with the definitions dedented, so
    they read as paragraphs under their term, not as indented code."""
    out: list[str] = []
    block: list[str] = []
    for line in [*body, "end"]:
        if line.strip() and not line[:1].isspace():
            if block:
                out.extend(["", *textwrap.dedent("\n".join(block)).strip("\n").split("\n"), ""])
                block = []
            out.append(line)
        else:
            block.append(line)
    return out[:-1]


def _pipe_table(lines: list[str], start: int) -> tuple[list[str], int] | None:
    """A pipe table starting at ``start`` (header line, delimiter line, rows) as row lines, and the index after."""
    if start + 1 >= len(lines) or "|" not in lines[start] or not _TABLE_DELIMITER.match(lines[start + 1]):
        return None
    if "|" not in lines[start + 1] and "|" not in lines[start].strip().strip("|"):
        return None
    end = start + 2
    while end < len(lines) and lines[end].strip() and "|" in lines[end]:
        end += 1
    rows = [_pipe_cells(line) for line in [lines[start], *lines[start + 2 : end]]]
    return ["", table_text([[reduce_inline(c) for c in row] for row in rows]), ""], end


def _pipe_cells(line: str) -> list[str]:
    """The cells of a pipe-table line (``\\|`` is a pipe in a cell, not a border)."""
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", line)]


def _mdx_tag(opened: re.Match[str]) -> list[str]:
    """An MDX component tag's visible text: its label or title attribute (closing tags: nothing)."""
    if opened.group("close"):
        return []
    found = _SHORTCODE_TITLE.search(opened.group("attrs") or "")
    return [found.group(1), ""] if found else []


def _block_shortcode(line: str) -> list[str] | None:
    """A line that is only shortcode tags: its title arguments (None: the line is more than tags)."""
    if not _SHORTCODE.search(line) or _SHORTCODE.sub("", line).strip():
        return None
    titles = [t for t in (_shortcode_text(m.group("body")) for m in _SHORTCODE.finditer(line)) if t]
    return [" ".join(titles), ""] if titles else []


def _indented_code(lines: list[str]) -> set[int]:
    """The indices of the lines in indented code blocks, as a CommonMark parser finds them (in lists too)."""
    from rags_expert.retrieval.chunking import _blocks

    if not any(line.startswith(("    ", "\t")) for line in lines):
        return set()
    code: set[int] = set()
    for tok in _blocks(lines, {}):
        if tok.type == "code_block" and tok.map:
            code.update(range(tok.map[0], tok.map[1]))
    return code


def reduce_lines(lines: list[str], top: bool = False, alerts: bool = True) -> list[str]:
    """The lines of a Markdown text (no front matter) with docs-site markup reduced (see the module docstring).
    ``top``: the lines are the page's own, not a directive's body, so its ATX headings are the sections its
    unindented directives sit under. ``alerts``: GitHub alerts are read (not in an alert's body: a quote of a
    thousand nested alerts is no thousand nested calls). Blocks nested deeper than :data:`MAX_NESTING` keep their
    lines as written."""
    depth = _NESTING.get()
    if depth >= MAX_NESTING:
        return lines
    token = _NESTING.set(depth + 1)
    try:
        return _reduce_lines(lines, top, alerts)
    finally:
        _NESTING.reset(token)


def _reduce_lines(lines: list[str], top: bool, alerts: bool) -> list[str]:
    """:func:`reduce_lines` at one level of nesting."""
    out: list[str] = []
    code = _indented_code(lines)
    section: tuple[int, str] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if index in code:
            out.append(line)
            index += 1
            continue
        if fence := _FENCE.match(line):
            if fence.group("info").strip().startswith("{"):
                reduced, index = _directive(lines, index, fence, None if fence.group("indent") else section)
                out.extend(reduced)
                continue
            end = _fence_end(lines, index, fence.group("fence"))
            out.extend(lines[index : end + 1])
            index = end + 1
            continue
        if admonition := _ADMONITION.match(line):
            indent = _indent(line)
            body, index = _indented_body(lines, index + 1, indent)
            pad = " " * indent
            shown = admonition.group("tab")[1:-1] if admonition.group("tab") else None
            title = shown if shown is not None else _title(admonition.group("type"), admonition.group("rest"))
            out.extend([pad + reduce_inline(title).strip(), ""])
            out.extend(pad + b if b.strip() else "" for b in reduce_lines(body))
            out.append("")
            continue
        if opened := _COLON_OPEN.match(line):
            end = _closing(lines, index + 1, _COLON_CLOSE, len(opened.group("colons")))
            if opened.group("directive"):  # a MyST directive: {name} and its arguments
                body = lines[index + 1 : end]
                here = None if _indent(line) else section  # not in a list item's body
                out.extend(_myst(opened.group("directive"), opened.group("rest").strip(), body, section=here))
            else:  # Docusaurus: :::type Title
                out.extend(
                    [_title(opened.group("type"), opened.group("rest")), "", *reduce_lines(lines[index + 1 : end]), ""]
                )
            index = end + 1
            continue
        if opened := _SLASH_OPEN.match(line):
            end = _closing(lines, index + 1, _SLASH_CLOSE)
            out.extend([(opened.group("title") or "").strip() or _title(opened.group("type"), ""), ""])
            out.extend(reduce_lines(lines[index + 1 : end]))
            out.append("")
            index = end + 1
            continue
        if alerts and (alert := _ALERT.match(line)):
            end = index + 1
            while end < len(lines) and _QUOTE_MARK.match(lines[end]):
                end += 1
            body = [alert.group("rest"), *(_QUOTE_MARK.sub("", ln, count=1) for ln in lines[index + 1 : end])]
            out.extend([alert.group("type").capitalize(), "", *reduce_lines(body, alerts=False), ""])
            index = end
            continue
        if table := _pipe_table(lines, index):
            out.extend(table[0])
            index = table[1]
            continue
        index += 1
        if _INCLUDE.match(line):
            if line.strip() in ("--8<--", "-8<-"):  # a block of included file names, up to the next marker
                while index < len(lines) and lines[index].strip() not in ("--8<--", "-8<-"):
                    index += 1
                index += 1
            continue
        if (
            _MDX_LINE.match(line)
            or _LINK_DEFINITION.match(line)
            or _ATTRIBUTE_LINE.match(line)
            or _MYST_TARGET.match(line)
        ):
            continue
        if tag := _MDX_TAG.match(line):
            out.extend(_mdx_tag(tag))
            continue
        shortcode = _block_shortcode(line)
        if shortcode is not None:
            out.extend(shortcode)
            continue
        out.append(reduce_inline(line))
        if top and (heading := _heading(out[-1])):
            section = heading
    return out


def _heading(line: str) -> tuple[int, str] | None:
    """An ATX heading's level and title (a directive below it sits in its section): ``## Setup ##`` → (2, "Setup")."""
    found = _ATX_HEADING.match(line)
    if found is None or not (title := found.group(2).rstrip(" \t")):
        return None
    unclosed = title.rstrip("#")
    if unclosed != title and unclosed[-1:] in (" ", "\t"):  # a closing sequence: spaces, then only #
        title = unclosed.rstrip(" \t")
    return len(found.group(1)), title


def reduce_markup(text: str) -> str:
    """A Markdown text without front matter and with docs-site markup reduced to its visible text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    text = "\n".join(_single_blank_lines(reduce_lines(lines[_front_matter_end(lines) :], top=True)))
    return _roles_across_lines(text)


def _roles_across_lines(text: str) -> str:
    """Roles whose text goes on to the next line (``{ref}`the guide\\n<target>```) reduced, outside fenced code
    and code spans."""
    if "`" not in text:
        return text
    lines = text.split("\n")
    pieces: list[str] = []  # runs of lines: prose with its roles reduced, fenced code as it is

    def add_prose(end: int) -> None:
        if end > prose:
            pieces.append(_outside_code_spans("\n".join(lines[prose:end]), lambda p: p))

    prose = start = 0
    while start < len(lines):
        if not _FENCE_LINE.match(lines[start]):
            start += 1
            continue
        end = next((i for i in range(start + 1, len(lines)) if _FENCE_CLOSE.match(lines[i])), None)
        if end is None:  # no fence closes after this line, nor then after any later one: prose to the end
            break
        add_prose(start)
        pieces.append("\n".join(lines[start : end + 1]))
        prose = start = end + 1
    add_prose(len(lines))
    return "\n".join(pieces)


def _single_blank_lines(lines: list[str]) -> list[str]:
    """``lines`` with runs of blank lines outside fenced code cut to one (what removed markup leaves)."""
    out: list[str] = []
    fence = ""
    for line in lines:
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group("fence").startswith(fence) and not opened.group("info").strip()):
            fence = "" if fence else opened.group("fence")
        elif not fence and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return out
