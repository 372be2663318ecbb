"""The model's confirmation of the answer the run would give (``evidence.confirm``, on in the ``compact`` profile).

Graph tests with the scripted model (through ``astream``, as a host runs it): what the confirmation call reads,
which answers it lets through, what the reply says, how it meets the second reading and the budget; and the
calibration and the yes-probability read from OpenAI-shaped log-probabilities.
"""

from __future__ import annotations

import math

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.scripts import Script
from langchain_core.messages import AIMessage, HumanMessage

from rags_expert import RagsExpert
from rags_expert.llm.grading import _yes_no_mass
from rags_expert.rag.verdict.confirmed import Calibration, confirmation, logit, shipped_calibration
from rags_expert.testing import ScriptedChatModel

DOCS = {
    "castle": "Castle Varen stands on a hill above the river Mura. The castle was built in 1412 by Ilse Brandt.",
    "bridge": "The Mura bridge was completed in 1890.",
}
QUESTION = "When was Castle Varen built?"
RIGHT = "Castle Varen was built in 1412 [1]."


def logprobs(p_yes: float) -> AIMessage:
    """A one-token reply with OpenAI-shaped log-probabilities: "Yes" with ``p_yes``, "No" with the rest."""
    top = [{"token": "Yes", "logprob": math.log(p_yes)}, {"token": " no", "logprob": math.log(1 - p_yes)}]
    return AIMessage("Yes", response_metadata={"logprobs": {"content": [{**top[0], "top_logprobs": top}]}})


async def ask(script: Script, **settings):
    model = ScriptedChatModel(responder=script)
    base = {"llm": {"max_retries": 0}, "retrieval": {"top_k": 2}, "evidence": {"profile": "compact"}}
    agent = await RagsExpert(
        base | settings, chat_model=model, retriever=KeywordRetriever(docs=make_docs(DOCS), calls=[])
    ).async_init()
    nodes, final = [], None
    async for mode, chunk in agent.get_compiled_graph().astream(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t"}}, stream_mode=["updates", "values"]
    ):
        if mode == "updates":
            nodes.extend(chunk)
        else:
            final = chunk["messages"][-1]
    return final, nodes, model


async def test_a_confirmed_answer_is_given_with_how_sure_the_model_was():
    script = Script(generate=lambda t: RIGHT, confirm=lambda t: logprobs(0.97))
    final, nodes, model = await ask(script)
    meta = final.response_metadata
    assert meta["outcome"] == "success" and final.content.startswith(RIGHT)
    assert nodes[-2:] == ["confirm_answer", "finalize_success"]
    assert meta["confirmation"]["yes"] == pytest.approx(0.97, abs=1e-3)
    assert meta["confirmation"]["confidence"] == pytest.approx(
        shipped_calibration().probability("generated", 0.97), abs=1e-3
    )
    assert meta["llm_calls"] == 2
    # the confirmation reads the answer call's chunks and question, then the answer without its citation markers
    (answer_prompt, _), (confirm_prompt, kwargs) = model.calls
    assert kwargs["logprobs"] is True and kwargs["max_tokens"] == 1
    shared = answer_prompt.split("Answer the question")[0]
    assert confirm_prompt.startswith(shared)
    assert "Proposed answer: Castle Varen was built in 1412." in confirm_prompt


async def test_an_answer_the_model_doubts_is_the_honest_failure_not_the_answer():
    script = Script(generate=lambda t: RIGHT, confirm=lambda t: logprobs(0.02))
    final, nodes, _ = await ask(script, evidence={"profile": "compact", "extractive_fallback": False})
    meta = final.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "not_grounded"
    assert "1412" not in final.content.splitlines()[0]
    assert meta["confirmation"]["confidence"] < 0.5
    assert nodes[-2:] == ["confirm_answer", "finalize_failure"]


async def test_the_second_readings_quote_is_confirmed_too():
    """After a decline the answer selector quotes a unit; the model is asked about that quote before it is given."""
    script = Script(generate=lambda t: "NOT FOUND", confirm=lambda t: logprobs(0.01))
    final, nodes, model = await ask(script)
    assert "extract_answer" in nodes and nodes[-2:] == ["confirm_answer", "finalize_failure"]
    assert final.response_metadata["outcome"] == "failure"
    assert "Proposed answer:" in model.calls[-1][0] and "1412" in model.calls[-1][0].split("Proposed answer:")[1]


async def test_an_endpoint_without_log_probabilities_is_read_by_its_word():
    final, _, _ = await ask(Script(generate=lambda t: RIGHT, confirm=lambda t: "No."))
    assert final.response_metadata["outcome"] == "failure"
    assert final.response_metadata["confirmation"]["yes"] == 0.0


async def test_a_budget_spent_on_the_answer_leaves_a_quote_unconfirmed_and_ends_honestly():
    """One call allowed: the model declines with it; the selector's quote cannot be confirmed, so it is not given
    (and the run ends, no loop between the fallback and the budget)."""
    script = Script(generate=lambda t: "NOT FOUND", confirm=lambda t: logprobs(0.99))
    final, nodes, model = await ask(script, budget={"max_calls": 1})
    assert final.response_metadata["reason"] == "budget_exceeded"
    assert len(model.calls) == 1 and "confirm_answer" not in nodes


async def test_off_no_confirmation_call():
    final, nodes, model = await ask(Script(generate=lambda t: RIGHT), evidence={"profile": "compact", "confirm": False})
    assert final.response_metadata["outcome"] == "success" and "confirmation" not in final.response_metadata
    assert "confirm_answer" not in nodes and len(model.calls) == 1


def test_yes_probability_is_read_from_the_first_tokens_alternatives():
    meta = logprobs(0.8).response_metadata
    yes, no = _yes_no_mass(meta)
    assert yes / (yes + no) == pytest.approx(0.8)
    assert _yes_no_mass({}) is None


def test_the_calibration_is_monotone_and_threshold_decides():
    calibration = Calibration(
        {"generated": {"bias": -1.0, "yes_logit": 2.0}, "extractive": {"bias": 0.5, "yes_logit": 1.0}}
    )
    low, high = calibration.probability("generated", 0.3), calibration.probability("generated", 0.9)
    assert low < high
    assert calibration.probability("extractive", 0.5) == pytest.approx(1 / (1 + math.exp(-0.5)))
    assert calibration.probability("unknown kind", 0.9) == high  # reads the generated weights
    assert confirmation("generated", 0.9, high, calibration).confirmed
    assert not confirmation("generated", 0.9, high + 1e-6, calibration).confirmed
    assert logit(1.0) == pytest.approx(math.log((1 - 1e-4) / 1e-4))
