"""Settings split by concern, one model per agent; the old flat ``retrieval.*`` names still read."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from cli_run import run_cli
from pydantic import SecretStr, ValidationError

from rags_expert.settings import (
    LEGACY_RETRIEVAL_KEYS,
    AgentSettings,
    KGExpertSettings,
    KnowledgeBaseSettings,
    RagsExpertSettings,
    RetrievalSettings,
    coerce_settings,
)

ROOT = Path(__file__).resolve().parents[1]

# one valid value per old key, different from the default
OLD_VALUES = {
    "data_dir": "/tmp/rags-old-dir",
    "url": "http://q:6333",
    "api_key": "qk",
    "engine": "local",
    "collection": "old_coll",
    "timeout": 7.0,
    "local_wal": False,
    "embedding_provider": "wordllama",
    "embedding_model": "m",
    "embedding_base_url": "http://e/v1",
    "embedding_api_key": "ek",
    "embedding_dimensions": 64,
    "embedding_batch_size": 5,
    "embedding_threads": 2,
    "chunk_size": 300,
    "chunk_overlap": 10,
    "upsert_batch_size": 9,
    "kf_base_url": "http://kf/v1",
    "kf_api": "v1",
    "kf_token": "kt",
    "kf_timeout": 3.0,
    "kf_max_retries": 1,
    "kf_retry_base_delay": 0.1,
    "kf_search_policy": "strict",
    "kf_uid_overfetch_factor": 2,
    "kf_uid_overfetch_max": 11,
}


def _value(settings, section: str, name: str):
    value = getattr(getattr(settings, section), name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _same(value, expected) -> bool:
    return str(value) == str(expected)


def test_every_old_retrieval_key_is_listed():
    assert set(OLD_VALUES) == set(LEGACY_RETRIEVAL_KEYS)
    assert not set(LEGACY_RETRIEVAL_KEYS) & set(RetrievalSettings.model_fields)


@pytest.mark.parametrize("old", sorted(LEGACY_RETRIEVAL_KEYS))
def test_old_key_in_a_dict_moves_to_its_section_with_a_warning(old):
    section, new = LEGACY_RETRIEVAL_KEYS[old]
    with pytest.warns(DeprecationWarning, match=rf"retrieval\.{old} is deprecated: use {section}\.{new}"):
        settings = RagsExpertSettings(retrieval={old: OLD_VALUES[old], "top_k": 2})
    assert _same(_value(settings, section, new), OLD_VALUES[old])
    assert settings.retrieval.top_k == 2


@pytest.mark.parametrize("old", sorted(LEGACY_RETRIEVAL_KEYS))
def test_old_environment_variable_moves_to_its_section(old, monkeypatch):
    section, new = LEGACY_RETRIEVAL_KEYS[old]
    monkeypatch.setenv(f"RAGS_EXPERT_RETRIEVAL__{old.upper()}", str(OLD_VALUES[old]))
    with pytest.warns(DeprecationWarning, match=rf"use {section}\.{new}"):
        settings = RagsExpertSettings()
    assert _same(_value(settings, section, new), OLD_VALUES[old])


@pytest.mark.parametrize(
    "old", [k for k, (section, _) in LEGACY_RETRIEVAL_KEYS.items() if section in ("store", "embeddings")]
)
def test_kg_agent_reads_the_old_store_and_embedding_names_too(old, monkeypatch):
    """The lesson memory of the KG agent lived on retrieval.data_dir / embedding_*: old env and YAML still work."""
    section, new = LEGACY_RETRIEVAL_KEYS[old]
    with pytest.warns(DeprecationWarning):
        from_dict = KGExpertSettings(retrieval={old: OLD_VALUES[old], "top_k": 3})
    assert _same(_value(from_dict, section, new), OLD_VALUES[old])
    monkeypatch.setenv(f"RAGS_EXPERT_RETRIEVAL__{old.upper()}", str(OLD_VALUES[old]))
    with pytest.warns(DeprecationWarning):
        from_env = KGExpertSettings()
    assert _same(_value(from_env, section, new), OLD_VALUES[old])


def test_new_name_wins_over_the_old_one():
    with pytest.warns(DeprecationWarning):
        s = RagsExpertSettings(retrieval={"collection": "old"}, store={"collection": "new"})
    assert s.store.collection == "new"


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
    assert kg.stderr.strip() == (
        "error: invalid setting RAGS_EXPERT_KG__MAX_STEPS (kg.max_steps): Input should be greater than or equal to 1"
    )
    ref = run_cli(["settings"], env, cwd=tmp_path)
    assert ref.returncode == 0 and "## KG-query agent only (`KGExpertSettings`)" in ref.stdout
