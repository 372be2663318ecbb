"""An answer that states no fact is never given as a success (issue 52): whatever the profile, and however the
model grades it. A scripted 127.0.0.1 OpenAI-compatible server plays a weak model that restates the question or
cites nothing, and grades everything relevant, grounded and useful; ``ask`` must end in the honest failure, or (the
``compact`` profile's second reading) in the evidence's own quote, never in the model's answer."""

from __future__ import annotations

import json

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, request_kind, text, yes_no

pytestmark = pytest.mark.slow

DOCS = {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by the masons of Orlen.\n"}
QUESTION = "When was Castle Varen built?"


def trusting(answer: str, p_yes: float | None = 0.95):
    """A model that writes ``answer`` and approves every chunk and every answer (asked to confirm one, it says yes
    with probability ``p_yes``; None: an endpoint without log-probabilities, which writes "Yes")."""

    def script(body):
        kind = request_kind(body)
        if kind == "confirm":
            return text("Yes") if p_yes is None else yes_no(p_yes)
        if kind == "relevance":
            return {"relevant": True}
        if kind in ("grounded", "useful"):
            return {kind: True}
        if kind == "rephrase":
            return {"query": "Castle Varen construction"}
        return answer

    return script


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """The knowledge base every ask reads (ingested once: asking leaves it as it was)."""
    return ingest_docs(tmp_path_factory.mktemp("contentless"), DOCS)


def ask(data_dir, answer: str, profile: str, second_reading: bool = True, p_yes: float | None = 0.95, *flags: str):
    env = cli_env(data_dir) | {"RAGS_EXPERT_EVIDENCE__PROFILE": profile}
    if not second_reading:  # the model's answer checked alone: no quote of the evidence's after a rejection
        env |= {"RAGS_EXPERT_EVIDENCE__EXTRACTIVE_FALLBACK": "false"}
    with OpenAIServer(trusting(answer, p_yes)) as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        done = run_cli(["ask", "--base-url", url, "--model", "m", "-q", *flags, QUESTION], env)
    return done


@pytest.mark.parametrize("profile", ["standard", "compact"])
@pytest.mark.parametrize(
    "answer",
    [
        "Castle Varen was built [1].",  # restates the question
        "The time when Castle Varen was built is [1].",
        "[1][2].",  # an empty citation
        "NOT FOUND",  # the compact prompt's decline
        "Castle Varen was built in [1][2]. It is [1] and [2] and [1] and [2",  # cut at the cap inside a marker
    ],
)
def test_an_answer_without_a_fact_is_the_honest_failure(data_dir, profile, answer):
    done = ask(data_dir, answer, profile, second_reading=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert not done.stdout.startswith(answer)


@pytest.mark.parametrize("answer", ["Castle Varen was built [1].", "[1][2].", "NOT FOUND"])
def test_after_a_rejected_answer_compact_quotes_the_evidence(data_dir, answer):
    """The second reading: the answer selector's quote of the sentence that answers, cited; never the model's."""
    done = ask(data_dir, answer, "compact")
    assert done.returncode == 0, (done.stdout, done.stderr)
    first = done.stdout.splitlines()[0]
    assert not first.startswith(answer)
    assert "Castle Varen was built in 1412 by the masons of Orlen." in first and "[1]" in first


def test_the_compact_profile_accepts_an_answer_its_citation_holds(data_dir):
    done = ask(data_dir, "Castle Varen was built in 1412 [1].", "compact")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Castle Varen was built in 1412 [1].")


@pytest.mark.parametrize("second_reading", [False, True])
def test_the_compact_profile_rejects_what_its_citation_does_not_hold(data_dir, second_reading):
    done = ask(data_dir, "Castle Varen was built in 1523 by King Olaf of Denmark [1].", "compact", second_reading)
    first = done.stdout.splitlines()[0]
    assert "1523" not in first
    if second_reading:
        assert done.returncode == 0 and "1412" in first, (done.stdout, done.stderr)
    else:
        assert done.returncode == 1, (done.stdout, done.stderr)


@pytest.mark.parametrize("second_reading", [False, True])
def test_an_answer_the_model_does_not_confirm_is_the_honest_failure(data_dir, second_reading):
    """The compact profile's confirmation: the cited text holds the answer, but asked whether the excerpts state
    it, the model says "no" with most of its probability; nothing is given, neither its answer nor a quote."""
    done = ask(data_dir, "Castle Varen was built in 1412 [1].", "compact", second_reading, 0.05, "--json")
    assert done.returncode == 1, (done.stdout, done.stderr)
    reply = json.loads(done.stdout)
    assert "1412" not in reply["answer"].split("\n")[0]
    assert reply["reason"] == "not_grounded"
    assert reply["confirmation"]["yes"] == pytest.approx(0.05, abs=1e-3)
    assert reply["confirmation"]["confidence"] < 0.5


@pytest.mark.parametrize("p_yes", [0.95, None])
def test_a_confirmed_answer_carries_its_confidence(data_dir, p_yes):
    """Confirmed with log-probabilities (llama.cpp, vLLM, OpenAI), or by the written "Yes" of an endpoint that sends
    none: the answer is given with the model's yes-probability and the calibrated confidence."""
    done = ask(data_dir, "Castle Varen was built in 1412 [1].", "compact", True, p_yes, "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    reply = json.loads(done.stdout)
    assert reply["answer"].startswith("Castle Varen was built in 1412 [1].")
    assert reply["confirmation"]["yes"] == pytest.approx(0.95 if p_yes else 1.0, abs=1e-3)
    assert 0.5 <= reply["confirmation"]["confidence"] <= 1.0
    assert reply["llm_calls"] == 2  # the answer and its confirmation
