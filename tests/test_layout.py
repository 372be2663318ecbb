"""The two agents' packages point one way: the composition on top, the stages below it, the shared floor below them.

In each agent (:data:`AGENTS`) every module belongs to one group: ``top`` (the composition: the graph, its nodes,
the AgentFlow), ``stages`` (one folder per stage a question goes through) or ``floor`` (what several stages read).
A stage imports no other stage and nothing of the top; the floor imports no stage and nothing of the top. So
following one stage's code never enters another stage's folder. The imports are read by ``tests/test_layers.py``
(module level or inside a function; ``if TYPE_CHECKING:`` blocks skipped). Also: a ``_`` module is used only
inside its agent's package (and by its own test file), ``rag/_shared/`` only inside ``rag`` (and by its tests), and nothing in the package
touches ``sys.meta_path`` (a moved path keeps a plain shim file, docs/changelog.md).
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest
from test_layers import GRAPH, MODULES

ROOT = Path(__file__).resolve().parents[1]

AGENTS: dict[str, dict[str, set[str]]] = {
    "rag": {
        "top": {"__init__", "agent", "graph", "nodes"},
        "stages": {"retrieve", "grade", "answer", "verdict", "wrappers"},
        "floor": {"_shared", "authorization", "names", "options", "profiles", "state", "citations"},
    },
    "kg": {
        "top": {"__init__", "agent", "cypher_agent"},
        "stages": {"reflexion", "execution"},
        "floor": {"backends", "biocypher", "benchmark", "replies", "state"},
    },
}
"""Per agent, each group's members: a folder or a module directly in the agent's package (``rag/citations.py``
is the deprecated shim of the 0.1 path; it imports only :mod:`rags_expert.citations`)."""


def _member(module: str, agent: str) -> str | None:
    """``rags_expert.rag.retrieve.hops`` → ``retrieve``; ``rags_expert.rag`` → ``__init__``; None outside ``agent``."""
    parts = module.split(".")
    if parts[:2] != ["rags_expert", agent]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def _group(agent: str, member: str) -> str:
    return next(name for name, members in AGENTS[agent].items() if member in members)


def _wrong_way(graph: dict[str, set[str]], agent: str) -> list[str]:
    """``module -> target`` for each import in ``agent`` from a stage into another stage or the top, or from the
    floor into a stage or the top."""
    found = []
    for module, targets in graph.items():
        if (member := _member(module, agent)) is None:
            continue
        group = _group(agent, member)
        for target in targets:
            other = _member(target, agent)
            if other is None or other == member or group == "top":
                continue
            if _group(agent, other) in ("stages", "top"):
                found.append(f"{module} -> {target}")
    return sorted(found)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_every_module_of_an_agent_is_in_one_group(agent):
    members = {m for module in MODULES if (m := _member(module, agent)) is not None}
    grouped = [m for members_ in AGENTS[agent].values() for m in members_]
    assert len(grouped) == len(set(grouped))  # no member in two groups
    assert members == set(grouped)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_no_stage_imports_another_stage_and_the_floor_imports_no_stage(agent):
    assert _wrong_way(GRAPH, agent) == []


def test_the_direction_check_sees_a_stage_importing_another():
    """The check can fail: retrieve importing grade, and the floor importing a stage, are both caught."""
    hops, relevance, state = "rags_expert.rag.retrieve.hops", "rags_expert.rag.grade.relevance", "rags_expert.rag.state"
    graph = {**GRAPH, hops: GRAPH[hops] | {relevance}, state: GRAPH[state] | {hops}}
    assert _wrong_way(graph, "rag") == [f"{hops} -> {relevance}", f"{state} -> {hops}"]


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_internal_modules_are_imported_only_inside_their_package(agent):
    top = ROOT / "rags_expert" / agent
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
        if path != _mirror(name) and re.search(rf"\b{re.escape(name)}\b", path.read_text(encoding="utf-8"))
    ]
    assert outside == []


def _mirror(module: str) -> Path:
    """The test file of ``module`` (``rags_expert.kg.execution._policy`` → tests/kg/execution/test_policy.py),
    the one file outside the package that may import an internal module: to test it."""
    *folders, name = module.split(".")[1:]
    return ROOT.joinpath("tests", *folders, f"test_{name.lstrip('_')}.py")


def test_rag_shared_is_imported_only_by_rag_and_its_tests():
    shared = "rags_expert.rag._shared"
    outside = sorted(
        module
        for module, targets in GRAPH.items()
        if not module.startswith("rags_expert.rag") and any(t.startswith(shared) for t in targets)
    ) + [
        str(path.relative_to(ROOT))
        for folder in ("bench", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if shared in path.read_text(encoding="utf-8")
    ]
    assert outside == []


def test_nothing_in_the_package_touches_the_import_system():
    touching = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in (ROOT / "rags_expert").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in ("meta_path", "path_hooks")
    ]
    assert touching == []


@pytest.mark.parametrize("old", ["rags_expert.rag.citations", "rags_expert.rag.answer.citations"])
def test_a_documented_moved_path_warns_naming_the_version_that_removes_it(old):
    new = importlib.import_module("rags_expert.citations")
    sys.modules.pop(old, None)  # imported before: import it afresh, so it warns again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module.format_context is new.format_context and module.source_dict is new.source_dict
    assert set(module.__all__) <= set(vars(new))
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        f"{old} is deprecated and will be removed in rags-expert 0.3: import rags_expert.citations"
    ]


def test_an_undocumented_former_path_is_gone():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rags_expert.rag.verified")
