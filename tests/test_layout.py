"""The two agents' packages stay arranged by stage: small folders, and ``_`` modules used only inside their package;
the former flat ``rag`` paths still import, as the same modules."""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ["kg", "rag"]


def _package(name: str) -> Path:
    return ROOT / "rags_expert" / name


@pytest.mark.parametrize("agent", AGENTS)
def test_every_folder_holds_at_most_7_modules_besides_its_init(agent):
    top = _package(agent)
    crowded = {
        str(folder.relative_to(top)): n
        for folder in [top, *(p for p in top.rglob("*") if p.is_dir() and (p / "__init__.py").exists())]
        if (n := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 7
    }
    assert crowded == {}


@pytest.mark.parametrize("agent", AGENTS)
def test_internal_modules_are_imported_only_inside_their_package(agent):
    top = _package(agent)
    internal = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in top.rglob("_[a-z]*.py") if p.name != "__init__.py"
    )
    assert internal  # the check sees something
    outside = [
        f"{path.relative_to(ROOT)} names {name}"
        for folder in ("rags_expert", "tests", "bench", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if top not in path.parents and path != Path(__file__).resolve()
        for name in internal
        if re.search(rf"\b{re.escape(name)}\b", path.read_text(encoding="utf-8"))
    ]
    assert outside == []


@pytest.mark.parametrize("old", sorted(importlib.import_module("rags_expert.rag").MOVED))
def test_a_former_rag_path_imports_the_module_at_its_new_one_with_a_deprecation_warning(old):
    moved = importlib.import_module("rags_expert.rag").MOVED
    new = importlib.import_module(f"rags_expert.rag.{moved[old]}")
    sys.modules.pop(f"rags_expert.rag.{old}", None)  # imported before (a bench script): import it afresh
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"rags_expert.rag.{old}")
    assert module is new
    assert module.__spec__.name == new.__name__  # the alias did not replace the module's own spec
    assert [str(w.message) for w in caught] == [f"rags_expert.rag.{old} is deprecated: import {new.__name__}"]
