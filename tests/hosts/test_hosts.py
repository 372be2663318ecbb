"""The host contract: metadata, YAML loader, entry-point discovery."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever

from rags_expert import AgentFlow, RagsExpert
from rags_expert.hosts.loading import AgentConfigError, discover_agent_classes, load_agents, read_specs
from rags_expert.testing import ScriptedChatModel

YAML = """
agents:
  - name: docs-expert
    class_path: rags_expert.rag:RagsExpert
    enabled: true
    settings:
      retrieval: {top_k: 6}
      max_rephrases: 1
  - name: strict-expert
    class_path: rags_expert.rag.RagsExpert
    settings: {max_generations: 1}
  - name: disabled-expert
    class_path: rags_expert.rag:RagsExpert
    enabled: false
"""


async def test_load_agents_from_yaml(tmp_path):
    path = tmp_path / "agents.yaml"
    path.write_text(YAML)
    agents = await load_agents(path, chat_model=ScriptedChatModel(responses=[]), retriever=KeywordRetriever(docs=[]))
    assert sorted(agents) == ["docs-expert", "strict-expert"]
    docs = agents["docs-expert"]
    assert isinstance(docs, RagsExpert) and isinstance(docs, AgentFlow)
    assert docs.settings.retrieval.top_k == 6 and docs.settings.max_rephrases == 1
    assert agents["strict-expert"].settings.max_generations == 1
    assert docs.metadata["name"] == "docs-expert" and docs.metadata["tag"] == "rag"
    assert set(docs.metadata) == {"name", "role", "nickname", "description", "icon", "categories", "tag"}
    assert docs.get_compiled_graph() is not agents["strict-expert"].get_compiled_graph()


@pytest.mark.parametrize(
    "text,message",
    [
        ("- {name: a}", "class_path"),
        ("- {name: a, class_path: no.such.module:X}", "cannot import"),
        ("- {name: a, class_path: 'builtins:dict'}", "not an AgentFlow"),
        (
            "- {name: a, class_path: rags_expert.rag:RagsExpert}\n- {name: a, class_path: rags_expert.rag:RagsExpert}",
            "duplicate",
        ),
        ("just a string", "must be a YAML list"),
    ],
)
async def test_bad_agent_lists_get_clear_errors(text, message):
    with pytest.raises(AgentConfigError, match=message):
        await load_agents(text, chat_model=ScriptedChatModel(responses=[]), retriever=KeywordRetriever(docs=[]))


async def test_bad_settings_in_an_entry_fail_at_load_naming_the_agent_the_value_and_the_bound():
    message = "agent 'a': max_rephrases=-1 is invalid: must be ≥ 0"
    with pytest.raises(AgentConfigError, match=f"^{message}$"):
        await load_agents(
            "- {name: a, class_path: 'rags_expert.rag:RagsExpert', settings: {max_rephrases: -1}}",
            chat_model=ScriptedChatModel(responses=[]),
            retriever=KeywordRetriever(docs=[]),
        )


def test_read_specs_accepts_a_plain_list():
    specs = read_specs([{"name": "x", "class_path": "rags_expert.rag:RagsExpert"}])
    assert specs[0].enabled is True and specs[0].settings == {}


def test_entry_point_advertises_the_agent():
    classes = discover_agent_classes()
    assert classes.get("rags-expert") is RagsExpert
