"""A griffe extension for the API reference: Sphinx roles in docstrings become inline code.

The package's docstrings cross-reference with Sphinx roles (``:class:`~rags_expert.llm.chat.LLMCallError```);
mkdocstrings reads Markdown, so without this they would show as raw role text. A role becomes inline code
of its target (the last dotted part when the target starts with ``~``, as Sphinx shows it).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).strip()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def rst_roles_to_code(text: str) -> str:
    """``:role:`target``` → ```target```, ``:role:`~a.b.c``` → ```c```."""
    return _ROLE.sub(_code, text)


class RstRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring once griffe has loaded the object tree."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_roles_to_code(obj.docstring.value)
