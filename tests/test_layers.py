"""The package's import graph, read from the source: no cycles, and nothing imports upwards.

Every ``import`` of a ``rags_expert`` module counts, at module level or inside a function (a lazy import is still
a dependency); only ``if TYPE_CHECKING:`` blocks are skipped. A unit is a subpackage (``rag``, ``llm``, ...) or a
root module (``events``, ``limits``, ...); :data:`LAYERS` lists the units bottom-up, and a unit may import only
itself and the units below it."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rags_expert"

LAYERS = [
    # leaves: no rags_expert import, or only each other
    "secrets",
    "language",
    "limits",
    "events",
    "lazy",
    "threads",
    "outcomes",
    "testing",
    "prompts",
    "citations",
    # configuration, then the model and the knowledge base
    "settings",
    "checkpoints",
    "llm",
    "failsafe",
    "retrieval",
    "evidence",
    "lessons",
    "conversation",
    "agentflow",
    # the two agents
    "rag",
    "kg",
    # what runs them
    "__init__",
    "local",
    "evaluation",
    "diagrams",
    "hosts",
    "fred",
    "cli",
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """The rags_expert modules ``path`` imports (``from pkg import submodule`` names the submodule)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("rags_expert"):
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    found.add(sub if sub in MODULES else str(child.module))
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("rags_expert"))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


GRAPH = {module: _imported(path) - {module} for module, path in MODULES.items()}


def unit(module: str) -> str:
    """``rags_expert.rag.nodes`` → ``rag``; ``rags_expert.events`` → ``events``; ``rags_expert`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_unit_has_a_layer():
    assert {unit(m) for m in MODULES} == set(LAYERS)


def test_the_root_holds_at_most_14_modules():
    """The vocabulary both agents share (outcomes, citations, the failure path) and the few leaves; the rest in
    folders."""
    assert len([p for p in PACKAGE.glob("*.py")]) <= 14


def test_no_module_imports_a_unit_above_its_own():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if rank[unit(target)] > rank[unit(module)]
    )
    assert upward == []


def test_the_modules_import_each_other_without_a_cycle():
    try:
        TopologicalSorter(GRAPH).static_order()
        list(TopologicalSorter(GRAPH).static_order())
    except CycleError as exc:  # pragma: no cover - the failure names the cycle
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_check_sees_an_upward_import_and_a_cycle():
    """The checks above can fail: an upward edge and a cycle added to a copy of the graph are both caught."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    assert rank[unit("rags_expert.cli.ask")] > rank[unit("rags_expert.llm.chat")]
    cyclic = {**GRAPH, "rags_expert.llm.chat": GRAPH["rags_expert.llm.chat"] | {"rags_expert.rag.nodes"}}
    with pytest.raises(CycleError):
        list(TopologicalSorter(cyclic).static_order())
