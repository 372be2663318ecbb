"""Skip marks for tests that need an optional extra: ``@needs("rst")`` skips the test, naming the extra and the
``pip install`` that adds it, where the extra is not installed (a test that fails there tells nothing)."""

from __future__ import annotations

import pytest

from rags_expert.retrieval.loaders import install_hint
from rags_expert.retrieval.loaders.registry import importable

EXTRA_MODULES = {
    "rst": "docutils",
    "docx": "docx",
    "pdf": "pdfplumber",
    "postgres": "langgraph.checkpoint.postgres",
    "kg": "falkordb",
    "mcp": "mcp",
    "server": "langgraph_cli",
    "bench": "matplotlib",
    "local": "xllamacpp",
    "openvino": "openvino",
}
"""Each extra (pyproject.toml) and a module it installs."""


def missing_extra(extra: str) -> str | None:
    """Why a test needing ``extra`` cannot run (its module does not import), or None when it is installed."""
    if importable(EXTRA_MODULES[extra]):
        return None
    return f"the '{extra}' extra is not installed: {install_hint(extra)}"


def needs(extra: str) -> pytest.MarkDecorator:
    """A mark that skips a test where ``extra`` is not installed, naming it."""
    reason = missing_extra(extra)
    return pytest.mark.skipif(reason is not None, reason=reason or "")
