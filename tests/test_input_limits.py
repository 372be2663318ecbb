"""Issue 23 (1, 2, 10): a question over ``max_question_chars`` is refused in one place, a query is cut to what
the embedding model reads, a model reply is read up to ``llm.max_reply_chars``, and no parser of model or user
text grows worse than linearly (each is fed a megabyte of the text that made it quadratic, and its result is
checked; speed itself is measured side by side in ``bench/input_sizes.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer, castle_script, text
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage
from rag.test_integration_openai import make_settings

import rags_expert.kg.biocypher
from rags_expert import RagsExpert
from rags_expert.evidence.text import strip_citations
from rags_expert.evidence.units import units
from rags_expert.kg.replies import extract_cypher
from rags_expert.limits import clip_reply
from rags_expert.llm.chat import build_chat_model
from rags_expert.llm.grading import _numbers_chosen
from rags_expert.llm.parsing import (
    extract_code_block,
    extract_json_object,
    parse_free_text_field,
    parse_score,
    parse_yes_no,
)
from rags_expert.llm.structured import StructuredReply
from rags_expert.retrieval.embeddings import NamedEmbeddings, query_vector
from rags_expert.secrets import redact

MB = 1_000_000
LIMIT_LINE = (
    "error: the question has {n:,} characters, more than the limit of {limit:,} "
    "(setting max_question_chars, RAGS_EXPERT_MAX_QUESTION_CHARS)"
)


# --- the question's length ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("command", [["ask"], ["kg", "--schema", "unused.yaml"]], ids=["ask", "kg"])
def test_cli_refuses_an_over_long_question_in_one_line_with_exit_2(command, tmp_path):
    question = "why " * 2_500  # 10,000 characters, stripped to 9,999
    done = run_cli([command[0], question, *command[1:]], cli_env(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [LIMIT_LINE.format(n=9_999, limit=8_000)]
    assert done.stdout == ""


@pytest.mark.slow
@pytest.mark.integration
def test_cli_reads_the_limit_from_its_setting(tmp_path):
    done = run_cli(["ask", "x" * 101], cli_env(tmp_path, RAGS_EXPERT_MAX_QUESTION_CHARS="100"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [LIMIT_LINE.format(n=101, limit=100)]


async def _agent(server: OpenAIServer, castle_docs, **over: Any) -> RagsExpert:
    settings = make_settings(server, **over)
    agent = RagsExpert(
        settings, chat_model=build_chat_model(settings.llm), retriever=KeywordRetriever(docs=castle_docs)
    )
    return await agent.async_init()


@pytest.mark.integration
async def test_over_long_question_is_an_honest_failure_naming_the_limit(castle_docs):
    with OpenAIServer(castle_script) as server:
        agent = await _agent(server, castle_docs, max_question_chars=50)
        graph = agent.get_compiled_graph()
        question = "When was Castle Varen built? " * 3  # 87 characters
        out = await graph.ainvoke({"messages": [("user", question)]}, {"configurable": {"thread_id": "long"}})
        streamed = [
            chunk
            async for chunk in graph.astream(
                {"messages": [("user", question)]}, {"configurable": {"thread_id": "long2"}}, stream_mode="values"
            )
        ]
        assert server.requests == []  # refused before any model call
    for msg in (out["messages"][-1], streamed[-1]["messages"][-1]):
        meta = msg.response_metadata
        assert (meta["outcome"], meta["reason"], meta["error_class"]) == (
            "failure",
            "question_too_long",
            "QuestionTooLong",
        )
        assert "limit of 50" in msg.content and "max_question_chars" in msg.content
        assert meta["llm_calls"] == 0 and meta["sources"] == []


# --- the model reply ---------------------------------------------------------------------------------


GARBAGE = ("x" * 999 + " ") * 5_000  # 5 MB of words without a sentence end, a tool call or JSON


@pytest.mark.integration
async def test_a_5mb_garbage_reply_ends_the_run_with_a_bounded_answer(castle_docs):
    with OpenAIServer(lambda body: text(GARBAGE)) as server:
        agent = await _agent(server, castle_docs, llm={"max_reply_chars": 20_000})
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [("user", "When was Castle Varen built?")]}, {"configurable": {"thread_id": "garbage"}}
        )
        assert server.requests  # the garbage was really served
    msg = out["messages"][-1]
    assert msg.response_metadata["outcome"] in {"success", "failure"}
    assert len(msg.content) < 25_000


@pytest.mark.slow
@pytest.mark.integration
def test_ask_ends_on_5mb_replies_to_every_call_with_the_default_settings(tmp_path):
    """The item as a user met it: ``rags-expert ask`` against a server answering every call (grades, draft,
    answer, checks) with 5 MB of unpunctuated words, default reply cap. It used to run past 300 s; now it ends
    (run_cli's 180 s is only a hang guard) in the honest failure or an answer, one bounded printout, no traceback."""
    data = ingest_docs(tmp_path, {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"})
    with OpenAIServer(lambda body: text(GARBAGE)) as server:
        done = run_cli(
            ["ask", "When was Castle Varen built?", "--base-url", server.base_url, "--json"],
            cli_env(data, OPENAI_API_KEY="sk-test"),
        )
        served = len(server.requests)
    assert served >= 2  # the garbage was really served, to the grading and the answer calls
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    payload = json.loads(done.stdout)
    assert payload["outcome"] in {"success", "failure"}
    assert len(done.stdout) < 200_000  # what is read of a reply is capped (llm.max_reply_chars), so what is shown


def test_clip_reply_cuts_text_and_tool_call_strings():
    reply = AIMessage(
        "a" * 50,
        tool_calls=[{"name": "Grade", "args": {"reasoning": "b" * 50, "relevant": True}, "id": "1"}],
    )
    clipped = clip_reply(reply, 10)
    assert clipped.content == "a" * 10
    assert clipped.tool_calls[0]["args"] == {"reasoning": "b" * 10, "relevant": True}
    short = AIMessage("fine")
    assert clip_reply(short, 10) is short


# --- what the embedding model is given --------------------------------------------------------------


class _Recording(NamedEmbeddings):
    model_name, dimension = "recording", 2

    def __init__(self, max_input_chars: int) -> None:
        self.max_input_chars = max_input_chars
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return [1.0, 0.0]


class _Plain(Embeddings):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return [1.0]


def test_a_query_is_cut_to_the_models_input_before_embedding():
    model = _Recording(max_input_chars=100)
    question = "castle " * 20_000
    query_vector(model, question)
    assert model.seen == [question[:100]]
    plain = _Plain()  # a host's own model gets the setting's default
    query_vector(plain, question)
    assert plain.seen == [question[:2048]]


# --- parsers on a megabyte --------------------------------------------------------------------------


def test_yes_no_reads_a_megabyte_without_sentence_ends():
    assert parse_yes_no("word " * (MB // 5)) is None
    assert parse_yes_no("yes " + "word " * (MB // 5)) is True
    assert parse_yes_no("Is it relevant? " + "a" * MB) is None


def test_score_reads_a_megabyte_of_spaces_and_digits():
    assert parse_score("score" + " " * MB) is None
    assert parse_score("score" + " " * MB + "7/10") == 7.0
    assert parse_score("1" * MB) == 10.0  # a leading number, clamped
    assert parse_score("x" + "1" * MB) is None


def test_json_and_fences_read_a_megabyte():
    assert extract_json_object("```json" + " " * MB) is None
    assert extract_json_object("{" * MB) is None
    assert extract_code_block("```" + " " * MB + "\nx = 1\n```") == "x = 1"
    assert extract_code_block("```" + " " * MB) is None


def test_free_text_field_reads_a_megabyte_line_of_spaces():
    assert parse_free_text_field(" " * MB + "\nthe castle", "query") == "the castle"


def test_cypher_after_a_megabyte_of_blank_lines():
    assert extract_cypher("\n" * MB + "MATCH (n) RETURN n") == "MATCH (n) RETURN n"


def test_citations_and_table_rules_read_a_megabyte_of_spaces():
    assert strip_citations("built in 1412" + " " * MB + "[1]") == "built in 1412"
    assert strip_citations("built in 1412" + " " * MB + "[4") == "built in 1412"  # cut inside a marker
    assert strip_citations("built in" + " " * MB + "1412") == "built in" + " " * MB + "1412"
    assert units(" " * MB) == []


def test_chosen_numbers_read_a_megabyte_of_spaces():
    assert _numbers_chosen(StructuredReply(None, " " * MB + "x"), "relevant", 3) is None
    assert _numbers_chosen(StructuredReply(None, " " * MB + "[1, 3]"), "relevant", 3) == [True, False, True]


def test_redaction_reads_a_megabyte_of_dotted_words():
    text = "ab." * (MB // 3) + "http://user:pw@host"
    out = redact(text)
    assert out.endswith("http://***@host") and "pw" not in out[-30:]


async def test_kg_agent_refuses_an_over_long_question_through_its_graph():
    from rags_expert.kg import KGQueryReflexionAgent
    from rags_expert.kg.backends.falkordb_backend import FalkorDBBackend
    from rags_expert.settings import KGExpertSettings
    from rags_expert.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=[])
    agent = KGQueryReflexionAgent(
        chat_model=model,
        backend=FalkorDBBackend("gene_kg"),  # never started: the question is refused before any query
        schema=Path(rags_expert.kg.biocypher.__file__).parent / "sample_kg.yaml",
        schema_name="gene_kg",
        settings=KGExpertSettings(max_question_chars=50, lessons={"enabled": False}),
    )
    state = await agent.graph.ainvoke({"messages": [("user", "Which genes? " * 10)]})  # 129 chars, stripped
    msg = state["messages"][-1]
    meta = msg.response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["error_class"]) == (
        "failure",
        "question_too_long",
        "QuestionTooLong",
    )
    assert msg.content == "I could not answer: " + LIMIT_LINE.format(n=129, limit=50).removeprefix("error: ") + "."
    assert model.calls == [] and meta["steps"] == 0
