"""Lazy package exports (PEP 562): ``from rags_expert import RagsExpert`` works as before, but importing a
subpackage (the CLI: ``rags_expert.cli``) does not import LangGraph, Qdrant and the agents.

``rags-expert ask --local`` starts its model server before the heavy imports, so they overlap its load.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing ``exports[name]`` (a module path) on first access of ``name``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups skip this function
        return value

    return __getattr__
