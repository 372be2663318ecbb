"""Prompt files, host overrides and settings (dict, object, environment)."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script

from rags_expert import PromptError, PromptStore, RagsExpert, RagsExpertSettings
from rags_expert.prompts import packaged_prompt_dir, template_variables
from rags_expert.testing import ScriptedChatModel


def test_every_packaged_prompt_is_a_file_with_named_variables():
    store = PromptStore()
    assert {
        "grade_document",
        "grade_grounded",
        "grade_useful",
        "rephrase_query",
        "generate",
        "answer_system",
        "condense_question",
        "score",
    } <= set(store.keys())
    assert store.variables("grade_document") == {"question", "document"}
    for key in store.keys():  # noqa: SIM118 - PromptStore is not a mapping
        assert (packaged_prompt_dir() / f"{key}.txt").is_file()
        template_variables(store.get(key))  # well-formed


def test_override_is_validated_with_key_and_variable_named():
    with pytest.raises(PromptError, match=r"'grade_document'.*missing.*\{document\}"):
        PromptStore({"grade_document": "Is this relevant to {question}?"}).validate()
    with pytest.raises(PromptError, match=r"'generate'.*unknown.*\{foo\}"):
        PromptStore({"generate": "{context} {question} {feedback} {foo}"}).validate()
    with pytest.raises(PromptError, match="unknown prompt key 'nope'"):
        PromptStore({"nope": "x"}).validate()
    with pytest.raises(PromptError, match="'score'.*positional"):
        PromptStore({"score": "{task} {result} {}"}).validate()


async def test_async_init_rejects_a_bad_override():
    agent = RagsExpert(
        {"prompts": {"rephrase_query": "{question} {bogus}"}},
        chat_model=ScriptedChatModel(responses=[]),
        retriever=KeywordRetriever(docs=[]),
    )
    with pytest.raises(PromptError, match="rephrase_query.*bogus"):
        await agent.async_init()


async def test_overrides_from_settings_and_directory_are_used(tmp_path, castle_docs):
    (tmp_path / "answer_system.txt").write_text("HOUSE STYLE {date}: answer like a pirate, cite [n].")
    sent = []
    script = Script(generate=lambda t: sent.append(t) or "Arr, 1412 [1].")
    agent = await RagsExpert(
        {
            "prompt_dir": str(tmp_path),
            "prompts": {"generate": "DATA:\n{context}\n{feedback}\nQ: {question}\nAnswer with [n]."},
        },
        chat_model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=castle_docs, calls=[]),
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [("user", "When was Castle Varen built?")]}, {"configurable": {"thread_id": "x"}}
    )
    assert out["messages"][-1].response_metadata["outcome"] == "success"
    assert sent[0].startswith("HOUSE STYLE") and "DATA:\n<chunk" in sent[0]


def test_settings_from_dict_env_and_secret_hiding(monkeypatch):
    monkeypatch.setenv("RAGS_EXPERT_LLM__MODEL", "my-model")
    monkeypatch.setenv("RAGS_EXPERT_MAX_REPHRASES", "5")
    monkeypatch.setenv("RAGS_EXPERT_LLM__API_KEY", "sk-supersecret-999999")
    s = RagsExpertSettings()
    assert s.llm.model == "my-model" and s.max_rephrases == 5
    assert "sk-supersecret" not in repr(s) and "sk-supersecret" not in s.model_dump_json()
    assert RagsExpertSettings(**{"max_rephrases": 1}).max_rephrases == 1  # arguments beat the environment
    with pytest.raises(ValueError):
        RagsExpertSettings(max_generations=0)
    with pytest.raises(ValueError):
        RagsExpertSettings(no_such_setting=1)


def test_llm_call_bound_formula():
    s = RagsExpertSettings(retrieval={"top_k": 5}, max_rephrases=2, max_generations=3, multihop={"max_hops": 1})
    assert s.llm_call_bound(with_history=True) == 1 + 5 * 3 + 2 + 3 * 3
    assert s.llm_call_bound(with_history=False) == 5 * 3 + 2 + 3 * 3


def test_llm_call_bound_counts_each_hop_query_and_its_graded_chunks():
    one = RagsExpertSettings(retrieval={"top_k": 5}, multihop={"max_hops": 1})
    for hops, hop_k in ((2, None), (3, None), (2, 2)):
        s = one.model_copy(update={"multihop": one.multihop.model_validate({"max_hops": hops, "top_k": hop_k})})
        assert s.llm_call_bound() == one.llm_call_bound() + (hops - 1) * (1 + (hop_k or 5))


def test_settings_reference_page_is_current():
    from pathlib import Path

    from rags_expert.settings import settings_reference

    page = Path(__file__).resolve().parents[1] / "docs" / "settings.md"
    assert page.read_text().strip() == settings_reference().strip(), "run: rags-expert settings > docs/settings.md"
