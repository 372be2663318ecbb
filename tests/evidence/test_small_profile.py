"""The model profiles through the graph (``ainvoke``): attribution, evidence grading, the extractive fallback."""

from __future__ import annotations

from helpers.documents import KeywordRetriever, make_docs
from helpers.scripts import MODEL_CHECKS, Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.testing import ScriptedChatModel

LIGHTHOUSE = {
    "zephyr": "The Zephyr lighthouse was built in 1871 on Gull Rock by the engineer Mara Quill. "
    "Its granite tower is 34 metres tall.",
    "keepers": "The first keeper was Tobias Venn. The light was automated in 1962.",
    "mill": "Brassica Mill was founded in 1823 by the weaver Edmund Slate in the town of Lowfield.",
}


async def ask(question: str, script: Script, **settings):
    model = ScriptedChatModel(responder=script)
    retriever = KeywordRetriever(docs=make_docs(LIGHTHOUSE), calls=[])
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings}, chat_model=model, retriever=retriever
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "t"}}
    )
    return out["messages"][-1], script


SMALL = {"evidence": {"profile": "small", "use_embeddings": False}}
DRAFTING = {"evidence": {**SMALL["evidence"], "draft": True}}
"""The small profile with the model's drafts turned back on (``evidence.draft``; off by default)."""


async def test_standard_profile_attributes_an_uncited_supported_answer() -> None:
    script = Script(generate=lambda t: "The Zephyr lighthouse was built by Mara Quill.")
    msg, script = await ask("Who built the Zephyr lighthouse?", script, **MODEL_CHECKS)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.content == "The Zephyr lighthouse was built by Mara Quill [1]."
    assert msg.response_metadata["sources"][0]["title"] == "zephyr"
    assert script.count("generate") == 1 and script.count("grounded") == 1  # the LLM graders still decide


async def test_standard_profile_still_rejects_an_uncited_unsupported_answer() -> None:
    script = Script(generate=lambda t: "It was designed by Gustave Eiffel in Paris.")
    msg, script = await ask("Who built the Zephyr lighthouse?", script, max_generations=2)
    assert msg.response_metadata["outcome"] == "failure"
    assert script.count("generate") == 2 and script.count("grounded") == 0


async def test_attribution_off_keeps_the_old_rejection() -> None:
    script = Script(generate=lambda t: "The Zephyr lighthouse was built by Mara Quill.")
    msg, _ = await ask("Who built the Zephyr lighthouse?", script, evidence={"attribution": False}, max_generations=1)
    assert msg.response_metadata["outcome"] == "failure"


async def test_small_profile_quotes_the_answer_without_asking_the_model() -> None:
    script = Script(generate=lambda t: "Mara Quill built the Zephyr lighthouse [1].")
    msg, script = await ask("Who built the Zephyr lighthouse?", script, **SMALL)
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and meta["answer_kind"] == "extractive"
    assert (
        msg.content
        == "The source says: “The Zephyr lighthouse was built in 1871 on Gull Rock by the engineer Mara Quill.” [1]"
    )
    assert script.seen == [] and meta["llm_calls"] == 0  # graded by the evidence, answered by the selector


async def test_small_profile_with_drafts_grades_by_evidence_and_makes_one_llm_call() -> None:
    script = Script(generate=lambda t: "Mara Quill built the Zephyr lighthouse [3].")  # a weak model's wrong [n]
    msg, script = await ask("Who built the Zephyr lighthouse?", script, **DRAFTING)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.response_metadata["answer_kind"] == "generated"
    assert msg.content == "Mara Quill built the Zephyr lighthouse [1]."  # re-attributed to the supporting chunk
    assert script.seen == ["generate"] and msg.response_metadata["llm_calls"] == 1


async def test_small_profile_shows_the_model_only_the_best_sentences() -> None:
    prompts: list[str] = []
    script = Script(generate=lambda t: prompts.append(t) or "Tobias Venn was the first keeper.")
    await ask("Who was the first keeper?", script, **DRAFTING)
    assert "Tobias Venn" in prompts[0] and "automated in 1962" not in prompts[0]


async def test_small_profile_quotes_the_source_when_the_model_is_wrong() -> None:
    script = Script(generate=lambda t: "The lighthouse was built by Gustave Eiffel.")
    msg, script = await ask("Who built the Zephyr lighthouse?", script, **DRAFTING, max_generations=2)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.response_metadata["answer_kind"] == "extractive"
    assert "“The Zephyr lighthouse was built in 1871 on Gull Rock by the engineer Mara Quill.” [1]" in msg.content
    assert [s["title"] for s in msg.response_metadata["sources"]] == ["zephyr"]
    assert script.count("generate") == 1  # one draft, then the quote: a weak model's second draft is no better


async def test_small_profile_rejects_an_answer_that_does_not_answer() -> None:
    script = Script(generate=lambda t: "The Zephyr lighthouse stands on Gull Rock.")  # supported, but not a year
    msg, _ = await ask("When was the Zephyr lighthouse built?", script, **SMALL, max_generations=1)
    assert msg.response_metadata["answer_kind"] == "extractive"
    assert "1871" in msg.content


async def test_small_profile_says_not_found_for_an_absent_attribute() -> None:
    script = Script(generate=lambda t: "The Zephyr lighthouse was painted by Mara Quill.")
    msg, _ = await ask("Who painted the Zephyr lighthouse?", script, **SMALL)
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and msg.content.startswith("I could not find an answer")
    assert "painted by" not in msg.content  # the rejected draft is never offered
    # what it offers instead: the closest passages, quoted and cited, under their own heading
    assert "Not found; closest passages" in msg.content
    assert 1 <= len(meta["closest"]) <= 3 and len(meta["sources"]) >= 1
    for passage in meta["closest"]:
        assert f"“{passage['quote']}” [{passage['n']}]" in msg.content
        assert passage["quote"] in meta["sources"][passage["n"] - 1]["content"]


async def test_small_profile_says_not_found_for_an_absent_subject() -> None:
    script = Script(generate=lambda t: "Gustave Eiffel built it [1].")
    msg, script = await ask("Who built the Eiffel Tower?", script, **SMALL)
    assert msg.response_metadata["outcome"] == "failure"
    assert script.count("generate") == 0  # nothing relevant: the weak model is not even asked
    assert script.count("rephrase") == 0  # nor asked to rewrite the search


async def test_fallback_off_ends_in_the_honest_failure() -> None:
    script = Script(generate=lambda t: "The lighthouse was built by Gustave Eiffel.")
    settings = {"evidence": {**DRAFTING["evidence"], "extractive_fallback": False}}
    msg, _ = await ask("Who built the Zephyr lighthouse?", script, **settings, max_generations=1)
    assert msg.response_metadata["outcome"] == "failure"
