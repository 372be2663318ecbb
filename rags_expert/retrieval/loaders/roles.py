"""The Sphinx and MyST vocabulary both the Markdown and the reStructuredText loaders read: which roles name
code, which directives a reader never sees as text, which are code, and what a role shows."""

from __future__ import annotations

import re
from collections.abc import Callable

DROPPED_DIRECTIVES = frozenset(
    {
        "toctree",
        "include",
        "literalinclude",
        "contents",
        "index",
        "autosummary",
        "currentmodule",
        "module",
        "highlight",
        "tabularcolumns",
        "only-html",
        "meta",
        "raw",
        "image",
        "figure",
        "automodule",
        "autoclass",
        "autofunction",
        "automethod",
        "autoattribute",
        "autodata",
        "autoexception",
        "autodoc",
        "mermaid",
        "testsetup",
        "testcleanup",
        "moduleauthor",
        "sectionauthor",
        "codeauthor",
    }
)
"""MyST/Sphinx directives whose body a reader does not see as text (a table of contents, a file include, a doctest's
hidden setup and cleanup, the authors Sphinx shows only with ``show_authors``)."""
ADMONITIONS = frozenset(
    {"attention", "caution", "danger", "error", "hint", "important", "note", "tip", "warning", "admonition"}
)
"""Admonition directives: Sphinx shows their name as their title ("Note") when they are given none."""
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell", "doctest", "testcode", "ipython"})
"""MyST directives that are code fences: kept as a fence with their language."""

LABELS = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
    "seealso": "See also",
    "todo": "To do",
}
"""How Sphinx shows a directive's argument (``versionadded`` ``2.0`` → ``New in version 2.0:``)."""
VERSION_DIRECTIVES = frozenset({"versionadded", "versionchanged", "deprecated", "versionremoved"})
"""The directives whose label Sphinx writes at the start of their first paragraph ("New in version 2.0: Added")."""
RENAMED = {
    "version-added": "versionadded",
    "version-changed": "versionchanged",
    "version-deprecated": "deprecated",
    "version-removed": "versionremoved",
}
"""Sphinx 7.3's names of the version directives (``.. version-added:: 7.6``); the old names stay aliases."""


def directive_short(name: str) -> str:
    """A directive's name as the loaders look it up: lower case, without its domain, Sphinx 7.3's version directive
    names as the old ones (``py:function`` → ``function``, ``version-added`` → ``versionadded``)."""
    short = name.lower().split(":")[-1]
    return RENAMED.get(short, short)


CODE_ROLES = re.compile(
    r"(?:py:|c:|cpp:|js:)?(?:func|meth|class|attr|mod|obj|data|exc|const|type|member|var|envvar|option|program|command|file|samp|code|literal|setting|confval)"
)
"""Roles whose text reads as code: kept in a code span."""


def role_text(role: str, text: str) -> str:
    """What a role shows: ``title <target>`` → ``title``; ``~a.b.c`` → ``c``; ``!x`` → ``x``."""
    title, opened, target = text[:-1].rpartition("<") if text.endswith(">") else ("", "", "")
    named = bool(opened and target) and ">" not in target
    if named and title.strip():
        return title.strip()
    target = target if named else text
    target = target.lstrip("!")
    if target.startswith("~"):
        target = re.split(r"[.:]", target[1:])[-1]
    return target


def label_text(name: str, argument: str, text: Callable[[str], str], body: bool = True) -> str:
    """A labelled directive's (:data:`LABELS`) first line as Sphinx shows it: ``versionadded`` with the argument
    ``2.0 Now async.`` → ``New in version 2.0: Now async.``, and with ``2.0`` and no ``body`` (nothing follows)
    ``New in version 2.0.``; ``seealso`` with ``:ref:`names``` → ``See also: names``; ``text`` turns the words after
    the version (markup of the loader's format) into Markdown."""
    version, _, said = argument.strip().partition(" ") if name in VERSION_DIRECTIVES else ("", "", argument)
    said = text(said).strip() if said.strip() else ""
    end = "." if name in VERSION_DIRECTIVES and not said and not body else ":"
    return " ".join(f"{LABELS[name]} {version}{end}".replace(f" {end}", end).split() + said.split())


DESCRIPTIONS = re.compile(
    r"(?<!\w)(?:\w++:)?(?:function|class|method|attribute|data|exception|decorator|decoratormethod|classmethod|"
    r"staticmethod|property|module|envvar|option|confval|describe|object|program|cmdoption|setting|type|member|var|macro)"
)
"""Sphinx object descriptions: a heading one level below their section (Sphinx lists them in the table of
contents), the signature shown as code, then the description."""
SHOWN_OPTIONS = {"type": "Type", "value": "Value", "default": "Default"}
"""A description's options Sphinx shows (``:type: int``, ``:value: 5``, sphinx 7.4's ``confval``'s ``:default:``),
each as a line of its own ("Default: 5"); other options (``:noindex:``) show nothing."""


def description_name(signature: str) -> str:
    """The name an object description's heading shows: its signature up to its parameters (``get`` for
    ``get(url, timeout=15)``, ``Flask`` for ``Flask(import_name)``); a signature without them is its own name."""
    return " ".join(re.split(r"[(\[]", signature, maxsplit=1)[0].split()) or signature


def description_head(signature: str, options: dict[str, str], inline: Callable[[str], str], level: int) -> list[str]:
    """The lines an object description opens with, in both loaders: at ``level`` (0: none) a heading named by
    :func:`description_name`, the signature as code unless that heading shows it whole, and the options Sphinx shows
    (:data:`SHOWN_OPTIONS`, their markup read by ``inline``) as lines of their own ("Default: 5")."""
    name = description_name(signature)
    out = [f"{'#' * min(6, level)} {name}", ""] if level else []
    if signature and not (level and signature == name):
        out += [f"`{signature}`", ""]
    for key, label in SHOWN_OPTIONS.items():
        if options.get(key):
            out += [f"{label}: {' '.join(inline(options[key]).split())}", ""]
    return out
