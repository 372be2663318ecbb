"""The RAG working state: one table of defaults, read through ``value``, and a fresh question's state."""

from __future__ import annotations

from rags_expert.rag.state import DEFAULTS, PER_RUN, RagState, fresh_question, value
from rags_expert.settings import RagsExpertSettings


def test_every_state_key_has_one_default_and_no_default_names_an_unknown_key():
    assert set(DEFAULTS) == set(RagState.__annotations__)  # the TypedDict with its InputState keys


def test_a_missing_key_reads_a_copy_of_its_default():
    documents = value({}, "documents")
    documents.append("changed")
    assert value({}, "documents") == [] and DEFAULTS["documents"] == []
    assert value({"documents": ["d"]}, "documents") == ["d"]


def test_a_fresh_question_takes_its_caps_from_the_settings_and_keeps_the_per_run_keys():
    settings = RagsExpertSettings(max_rephrases=3, budget={"max_calls": 7}, multihop={"max_hops": 2})
    fresh = fresh_question(settings)
    assert not set(PER_RUN) & set(fresh)
    assert fresh["max_rephrases"] == 3 and fresh["max_calls"] == 7 and fresh["max_hops"] == 2
    assert fresh["failure_reason"] == "" and fresh["documents"] == []


def test_the_small_profile_has_no_rephrase_loop_and_answers_once():
    fresh = fresh_question(RagsExpertSettings(evidence={"profile": "small"}, max_rephrases=3, max_generations=3))
    assert fresh["max_rephrases"] == 0 and fresh["max_generations"] == 1 and fresh["draft"] is False
