"""The documentation agrees with the code: generated graph diagrams, API pages, nav, strict build."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_example_agent import load_example

from rags_expert.diagrams import GRAPHS, REGENERATE, _EmptyRetriever, render_page
from rags_expert.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_graphs_page_matches_the_compiled_graphs():
    """docs/graphs.md is exactly what the documented command prints from the current code."""
    done = subprocess.run(
        [sys.executable, "-m", "rags_expert.diagrams"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    committed = (DOCS / "graphs.md").read_text(encoding="utf-8")
    assert committed == done.stdout, f"docs/graphs.md disagrees with the compiled graphs; regenerate: {REGENERATE}"


@pytest.mark.parametrize("graph", GRAPHS, ids=lambda g: g.title.split()[0])
async def test_each_diagram_draws_every_node_of_its_graph(graph):
    """The picture has a box for every node the agent's graph builder adds (and no other)."""
    agent = await graph.build()
    drawn = set(re.findall(r"^\t(\w+)\(\1\)$", render_mermaid(agent), re.M))
    assert drawn == set(agent.build_graph().nodes)


def render_mermaid(agent) -> str:
    return agent.get_compiled_graph(checkpointer=False).get_graph().draw_mermaid()


async def test_graphs_page_holds_one_diagram_per_graph():
    page = await render_page()
    assert page.count("```mermaid") == len(GRAPHS) == 2
    assert "execute_tool" in page and "grade_documents" in page


async def test_extending_page_diagram_matches_the_example():
    agent = (
        await load_example()
        .ClaimChecker(chat_model=ScriptedChatModel(responses=[]), retriever=_EmptyRetriever())
        .async_init()
    )
    block = re.search(r"```mermaid\n(.*?)\n```", (DOCS / "extending.md").read_text(encoding="utf-8"), re.S)
    assert block, "docs/extending.md has no mermaid diagram"
    assert block.group(1) == render_mermaid(agent).strip(), (
        "docs/extending.md's diagram disagrees with examples/claim_checker.py: paste the example's "
        "get_compiled_graph().get_graph().draw_mermaid()"
    )


def test_extending_page_includes_the_example_file():
    assert '--8<-- "examples/claim_checker.py"' in (DOCS / "extending.md").read_text(encoding="utf-8")


def _api_targets() -> list[str]:
    return [
        t
        for page in sorted((DOCS / "api").glob("*.md"))
        for t in re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M)
    ]


def test_api_pages_name_objects_that_exist():
    """Every ``::: dotted.path`` of the API reference imports (a rename breaks this test, not only the build)."""
    targets = _api_targets()
    assert "rags_expert.agentflow.AgentFlow" in targets and "rags_expert.llm.grading" in targets
    for target in targets:
        module, _, attr = target.rpartition(".")
        try:
            importlib.import_module(target)
        except ImportError:
            assert hasattr(importlib.import_module(module), attr), f"API page names missing object {target}"


def test_every_page_is_in_the_nav():
    nav = set(re.findall(r":\s+(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_ext" not in p.parts}
    assert pages - nav == set(), "pages missing from mkdocs.yml nav"
    assert nav - pages == set(), "nav entries without a page"


@pytest.mark.slow
def test_docs_build_strictly(tmp_path):
    """``mkdocs build --strict`` (as CI runs it) succeeds; needs the docs extra."""
    for module in ("material", "mkdocstrings_handlers.python", "griffe_pydantic"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install '.[docs]')")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**_env(), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "grading" / "index.html").is_file()


def test_no_page_the_readme_ingests_quotes_the_readmes_question():
    """README command 1 ingests docs/ and then asks one question: a page repeating that question (a benchmark
    table of the command, say) holds every word of it and becomes the quoted answer, as it did twice."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    question = re.search(r'rags-expert ask --local "([^"]+)"', readme)
    assert question is not None, "README command 1 no longer asks a question"
    quoting = [
        page.name for page in sorted(DOCS.rglob("*.md")) if question.group(1) in page.read_text(encoding="utf-8")
    ]
    assert quoting == [], f"these pages repeat the README's question: {quoting}"
