"""Issue 24: the start both graphs' ``prepare`` share (``conversation.open_question``) and the history a
follow-up is condensed against (``conversation.followup_transcript``); each graph's own refusals through
``ainvoke`` are tested in test_input_limits, test_checkpoint_faults and test_graph_routes."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from rags_expert.checkpoints import FAULT_REASON
from rags_expert.checkpoints.guard import FAULT_KEY
from rags_expert.conversation import followup_transcript, open_question
from rags_expert.limits import QuestionTooLongError
from rags_expert.settings import RagsExpertSettings

THREAD = [HumanMessage("Who built the castle?"), AIMessage("King Otto [1]."), HumanMessage("  When?  ")]
NO_FAULT: dict = {"configurable": {}}


def test_a_normal_run_goes_on_with_the_stripped_question_and_the_history_before_it():
    start = open_question(THREAD, NO_FAULT, 100)
    assert (start.question, start.history, start.reason, start.error) == ("When?", THREAD[:2], "", "")


def test_a_checkpointer_fault_stops_the_run_before_any_other_check():
    fault = {"configurable": {FAULT_KEY: "CheckpointerError: postgres is down"}}
    start = open_question([*THREAD[:2], HumanMessage("x" * 50)], fault, 10)
    assert (start.reason, start.error) == (FAULT_REASON, "CheckpointerError: postgres is down")
    assert start.question == "x" * 50


def test_a_run_whose_last_message_is_not_the_users_has_no_question():
    start = open_question(THREAD[:2], NO_FAULT, 100)
    assert (start.question, start.reason, start.error) == ("", "empty_question", "")


def test_an_over_long_question_is_refused_with_a_preview_and_the_limits_message():
    question = "why " * 100  # 399 characters once stripped
    start = open_question([HumanMessage(question)], NO_FAULT, 50)
    assert start.reason == "question_too_long"
    assert start.error == f"QuestionTooLong: {QuestionTooLongError(399, 50)}"
    assert start.question == question.strip()[:200] + "…"


def test_no_limit_accepts_any_length():
    assert open_question([HumanMessage("why " * 1_000)], NO_FAULT, None).reason == ""


def test_the_transcript_is_empty_when_condensing_is_off_or_there_is_no_history():
    on = RagsExpertSettings(condense_followups=True, history_messages=6)
    assert followup_transcript(THREAD[:2], on) == "User: Who built the castle?\nAssistant: King Otto [1]."
    assert followup_transcript([], on) == ""
    assert followup_transcript(THREAD[:2], RagsExpertSettings(condense_followups=False)) == ""
