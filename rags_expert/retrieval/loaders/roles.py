"""The Sphinx and MyST vocabulary both the Markdown and the reStructuredText loaders read: which roles name
code, which directives a reader never sees as text, which are code, and what a role shows."""

from __future__ import annotations

import re

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
    }
)
"""MyST/Sphinx directives whose body a reader does not see as text (a table of contents, a file include)."""
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell", "doctest", "testcode", "ipython"})
"""MyST directives that are code fences: kept as a fence with their language."""

CODE_ROLES = re.compile(
    r"(?:py:|c:|cpp:|js:)?(?:func|meth|class|attr|mod|obj|data|exc|const|type|member|var|envvar|option|program|command|file|samp|code|literal|setting|confval)"
)
"""Roles whose text reads as code: kept in a code span."""


def role_text(role: str, text: str) -> str:
    """What a role shows: ``title <target>`` → ``title``; ``~a.b.c`` → ``c``; ``!x`` → ``x``."""
    named = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", text)
    if named and named.group(1).strip():
        return named.group(1).strip()
    target = named.group(2) if named else text
    target = target.lstrip("!")
    if target.startswith("~"):
        target = re.split(r"[.:]", target[1:])[-1]
    return target
