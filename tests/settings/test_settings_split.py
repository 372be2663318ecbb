"""Settings split by concern, one model per agent."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from helpers.cli_run import run_cli
from pydantic import BaseModel, ValidationError

from rags_expert.kg.agent import KGQueryExpert
from rags_expert.rag import RagsExpert
from rags_expert.settings import (
    AgentSettings,
    KGExpertSettings,
    KnowledgeBaseSettings,
    RagsExpertSettings,
    SettingsSection,
    coerce_settings,
)

ROOT = Path(__file__).resolve().parents[2]


def test_an_old_flat_retrieval_name_is_an_unknown_key():
    """0.1.0 reads only the names by concern: ``retrieval.kf_token`` is an error, not a silent move."""
    with pytest.raises(ValidationError, match="kf_token"):
        RagsExpertSettings(retrieval={"kf_token": "t"})


def test_new_names_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAGS_EXPERT_STORE__COLLECTION", "c1")
    monkeypatch.setenv("RAGS_EXPERT_EMBEDDINGS__PROVIDER", "wordllama")
    monkeypatch.setenv("RAGS_EXPERT_KNOWLEDGE_FLOW__TOKEN", "tok")
    monkeypatch.setenv("RAGS_EXPERT_RETRIEVAL__TOP_K", "7")
    monkeypatch.setenv("RAGS_EXPERT_KG__MAX_STEPS", "4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # new names: no deprecation warning
        rag, kg = RagsExpertSettings(), KGExpertSettings()
    assert (rag.store.collection, rag.embeddings.provider, rag.retrieval.top_k) == ("c1", "wordllama", 7)
    assert rag.knowledge_flow.token.get_secret_value() == "tok"
    assert (kg.store.collection, kg.embeddings.provider, kg.kg.max_steps) == ("c1", "wordllama", 4)


def test_one_block_configures_both_agents():
    """A host's settings block may hold both agents' sections: each agent reads its own, ignores the other's."""
    block = {
        "llm": {"model": "m1"},
        "retrieval": {"top_k": 5},
        "kg": {"max_steps": 2},
        "max_rephrases": 1,
        "knowledge_flow": {"api": "v2"},
        "ingestion": {"chunk_size": 500},
    }
    rag, kg = RagsExpertSettings(**block), KGExpertSettings(**block)
    assert (rag.llm.model, rag.retrieval.top_k, rag.max_rephrases) == ("m1", 5, 1) and not hasattr(rag, "kg")
    assert (kg.llm.model, kg.kg.max_steps) == ("m1", 2)
    assert not hasattr(kg, "retrieval") and not hasattr(kg, "max_rephrases")


def test_unknown_keys_still_fail():
    with pytest.raises(ValidationError, match="no_such_setting"):
        RagsExpertSettings(no_such_setting=1)
    with pytest.raises(ValidationError, match="no_such_setting"):
        KGExpertSettings(no_such_setting=1)


def _sections(agent: type[AgentSettings]) -> list[str]:
    return [
        name
        for name, info in agent.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, SettingsSection)
    ]


def _error_locs(info: pytest.ExceptionInfo[ValidationError]) -> list[tuple]:
    return [(e["loc"], e["type"]) for e in info.value.errors()]


@pytest.mark.parametrize(
    ("agent", "section"),
    [(agent, section) for agent in (RagsExpertSettings, KGExpertSettings) for section in _sections(agent)],
)
def test_a_misspelt_key_in_any_section_is_an_error_naming_it(agent, section):
    with pytest.raises(ValidationError) as info:
        agent(**{section: {"no_such_key": 1}})
    assert _error_locs(info) == [((section, "no_such_key"), "extra_forbidden")]


def test_every_section_of_both_agents_is_checked():
    """A new section that forgets the SettingsSection base fails here, not silently in production."""
    for agent in (RagsExpertSettings, KGExpertSettings):
        models = {
            n
            for n, i in agent.model_fields.items()
            if isinstance(i.annotation, type) and issubclass(i.annotation, BaseModel)
        }
        assert models == set(_sections(agent)) and len(models) >= 6


def test_the_agents_reject_a_misspelt_key_in_a_dict():
    with pytest.raises(ValidationError) as info:
        RagsExpert({"llm": {"modle": "m"}, "retrieval": {"top_k": 2}})
    assert _error_locs(info) == [(("llm", "modle"), "extra_forbidden")]
    with pytest.raises(ValidationError) as info:
        KGQueryExpert({"kg": {"max_step": 2}})
    assert _error_locs(info) == [(("kg", "max_step"), "extra_forbidden")]
    with pytest.raises(ValidationError, match="top_kk"):
        KnowledgeBaseSettings(retrieval={"top_kk": 2})


def test_the_other_agents_sections_are_still_ignored_even_with_unknown_keys():
    """One block may serve both agents: the RAG agent does not judge the kg section, nor the KG agent retrieval."""
    assert RagsExpertSettings(kg={"no_such_key": 1}, retrieval={"top_k": 3}).retrieval.top_k == 3
    assert KGExpertSettings(retrieval={"no_such_key": 1}, max_rephrases=99, kg={"max_steps": 2}).kg.max_steps == 2


def test_a_misspelt_value_is_never_echoed_in_the_error():
    with pytest.raises(ValidationError) as info:
        RagsExpertSettings(llm={"api_ky": "sk-secret-typo-123"})
    assert "llm.api_ky" in str(info.value) and "sk-secret-typo-123" not in str(info.value)


@pytest.mark.parametrize(
    ("variable", "rag_fails", "kg_fails"),
    [
        ("RAGS_EXPERT_LLM__MODLE", True, True),  # a shared section
        ("RAGS_EXPERT_LMM__MODEL", True, True),  # a misspelt section
        ("RAGS_EXPERT_RETRIEVAL__TOPK", True, False),  # the RAG agent's section: the KG agent ignores it
        ("RAGS_EXPERT_KG__MAXSTEPS", False, True),  # the KG agent's section: the RAG agent ignores it
        ("RAGS_EXPERT_NOT_A_SETTING", False, False),  # no `__`: the prefix is shared with other variables
    ],
)
def test_misspelt_environment_variables(variable, rag_fails, kg_fails, monkeypatch):
    monkeypatch.setenv(variable, "3")
    for agent, fails in ((RagsExpertSettings, rag_fails), (KGExpertSettings, kg_fails)):
        if fails:
            with pytest.raises(ValidationError, match="extra_forbidden"):
                agent()
        else:
            agent()


def test_shared_sections_are_declared_once():
    shared = set(AgentSettings.model_fields)
    assert {"llm", "grading", "lessons", "local", "store", "embeddings", "prompts"} <= shared
    assert shared <= set(RagsExpertSettings.model_fields) and shared <= set(KGExpertSettings.model_fields)
    assert isinstance(RagsExpertSettings(), KnowledgeBaseSettings)
    assert "kg" not in RagsExpertSettings.model_fields and "retrieval" not in KGExpertSettings.model_fields


def test_coerce_settings_per_agent():
    rag = RagsExpertSettings(llm={"model": "shared-model"}, store={"collection": "c"}, retrieval={"top_k": 9})
    kg = coerce_settings(rag, KGExpertSettings)
    assert isinstance(kg, KGExpertSettings)
    assert (kg.llm.model, kg.store.collection) == ("shared-model", "c")
    assert coerce_settings({"kg": {"max_steps": 3}}, KGExpertSettings).kg.max_steps == 3
    assert coerce_settings(None).retrieval.top_k == 4
    with pytest.raises(TypeError, match="KGExpertSettings"):
        coerce_settings(42, KGExpertSettings)


@pytest.mark.slow
def test_cli_kg_reads_kg_settings_and_rag_commands_ignore_them(tmp_path):
    """Through the real CLI: an invalid kg value fails `kg` (exit 2, one line) but not `settings`."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "RAGS_EXPERT_DATA_DIR": str(tmp_path),
        "RAGS_EXPERT_KG__MAX_STEPS": "0",
    }
    kg = run_cli(["kg", "q", "--schema", "s.yaml"], env, cwd=tmp_path)
    assert kg.returncode == 2 and "Traceback" not in kg.stderr
    assert kg.stderr.strip() == ("error: RAGS_EXPERT_KG__MAX_STEPS=0 is invalid: must be ≥ 1 (kg.max_steps)")
    ref = run_cli(["settings"], env, cwd=tmp_path)
    assert ref.returncode == 0 and "## KG-query agent only (`KGExpertSettings`)" in ref.stdout
