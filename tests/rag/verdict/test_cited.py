"""The checks every profile makes without a model call, and the compact profile's cited-support verdict."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rags_expert.rag.verdict.cited import cited_support, cited_verdicts, declines, states_something

WORKERS = Document(
    "# Server options\n\nThe `--timeout` option is the number of seconds a worker may stay silent before it is "
    "restarted. The default timeout is 30 seconds.\n\n```sh\nserver --timeout 90 --port 9090\n```\n",
    metadata={"title": "Server options"},
)
DEPLOY = Document(
    "# Deploying\n\nPut the server behind a reverse proxy such as nginx.\n", metadata={"title": "Deploying"}
)


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        (
            "The most install jobs Poetry will run side by side is [1].",
            "What is the most install jobs Poetry runs side by side?",
        ),
        (
            "The command to show the wheel compatibility labels is [1][3].",
            "Which command shows the wheel compatibility labels?",
        ),
        ("Castle Varen was built [1].", "When was Castle Varen built?"),
        ("The time when Castle Varen was built is [1].", "When was Castle Varen built?"),
        ("[1][2].", "When was Castle Varen built?"),
        ("Yes [1].", "When was Castle Varen built?"),
        ("This is stated in [1].", "When was Castle Varen built?"),
        # cut at the token cap inside a marker: the "4" of "[4" is no number it states
        (
            "The header that switches every request to HTTPS is [1][2]. It is [1][2] and [2] and [3] and [4",
            "Which response header switches every request to HTTPS?",
        ),
    ],
)
def test_an_answer_that_states_no_fact(answer, question):
    assert not states_something(answer, question)


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        ("Castle Varen was built in 1412 [1].", "When was Castle Varen built?"),
        ("It was built in 1412 [1]. This is stated in [1].", "When was Castle Varen built?"),
        ("Yes [1].", "Does Black support Python 2?"),
        ("No, it does not [2].", "Can blackd listen on a Unix socket?"),
        ("Use `--skip-string-normalization` [1].", "How do I keep single quotes?"),
    ],
)
def test_an_answer_that_states_a_fact(answer, question):
    assert states_something(answer, question)


@pytest.mark.parametrize(
    "answer",
    ["NOT FOUND", "not found.", "The chunks do not mention the port [1].", "The port is not stated in the excerpts."],
)
def test_declining_replies(answer):
    assert declines(answer)


def test_a_right_answer_is_held_by_the_chunk_it_cites():
    held = cited_support("The default timeout is 30 seconds [1].", "What is the default timeout?", [WORKERS, DEPLOY])
    assert held.support == 1.0 and held.recited == 0


def test_a_misnumbered_citation_moves_to_the_chunk_that_holds_the_sentence():
    held = cited_support("The default timeout is 30 seconds [2].", "What is the default timeout?", [WORKERS, DEPLOY])
    assert held.text == "The default timeout is 30 seconds [1]." and held.support == 1.0 and held.recited == 1


def test_a_value_read_off_a_code_example_is_not_held():
    held = cited_support("The default port is 9090 [1].", "What is the default port?", [WORKERS, DEPLOY])
    assert held.support < 0.5


def test_the_verdict_rejects_what_no_cited_span_holds_and_accepts_what_one_does():
    question = "What is the default timeout?"
    wrong = cited_verdicts(
        question, "The default timeout is 45 minutes, set in the admin console [1].", [WORKERS], 0.75
    )
    assert not wrong.grounded and "hold" in wrong.reason
    right = cited_verdicts(question, "It is 30 seconds [1].", [WORKERS], 0.75)
    assert right.grounded and right.useful
    assert not cited_verdicts(question, "NOT FOUND", [WORKERS], 0.75).useful
