"""PostgreSQL faults a deployment meets (issue 23): a database restart, a database that stays down.

Every test runs a real PostgreSQL of this module's own (``own_postgres``, tests/helpers/pg_server.py), stopped and
started again by the test (same port, same data), and a scripted OpenAI-compatible model over real HTTP
(tests/helpers/openai_server.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer, request_kind
from helpers.openai_server import castle_script as cli_castle_script
from rag.test_integration_openai import ANSWER, QUESTION, castle_script, make_settings

from rags_expert import RagsExpert
from rags_expert.checkpoints import CheckpointerError
from rags_expert.settings import CheckpointerSettings

pytest.importorskip("langgraph.checkpoint.postgres", reason="the 'postgres' extra is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def pg_url(own_postgres) -> str:
    """A fresh database on the module's own server."""
    return own_postgres.create_database("t_" + uuid.uuid4().hex[:12])


async def castle_agent(server: OpenAIServer, url: str, docs: list[Any], pool_size: int = 4) -> RagsExpert:
    settings = make_settings(server).model_copy(
        update={"checkpointer": CheckpointerSettings(url=url, pool_size=pool_size)}
    )
    return await RagsExpert(settings, retriever=KeywordRetriever(docs=docs, calls=[])).async_init()


async def ask(agent: RagsExpert, thread: str, question: str = QUESTION) -> Any:
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [("user", question)]}, {"configurable": {"thread_id": thread}}
    )
    return out["messages"]


async def test_every_question_after_a_database_restart_is_answered(own_postgres, pg_url, castle_docs):
    """Idle connections the restart cut are found dead before reuse, not by a failing question."""
    pool = 4
    with OpenAIServer(castle_script) as server:
        agent = await castle_agent(server, pg_url, castle_docs, pool)
        try:
            # four conversations at once fill the pool with `pool` idle connections
            await asyncio.gather(*(ask(agent, f"t{i}") for i in range(pool)))
            assert len(agent._default_checkpointer._connections().idle) == pool
            own_postgres.halt()
            own_postgres.resume()
            finals = [(await ask(agent, f"t{i % pool}"))[-1] for i in range(2 * pool + 1)]
            histories = [len(await ask(agent, f"t{i}")) for i in range(pool)]
        finally:
            await agent.aclose()
    assert [m.response_metadata["outcome"] for m in finals] == ["success"] * (2 * pool + 1)
    assert all(m.content == ANSWER for m in finals)
    # no turn was lost: each thread holds its turn before the restart, its turns after it and the last one
    assert histories == [2 * (1 + 3 + 1)] + [2 * (1 + 2 + 1)] * (pool - 1)


def assert_checkpointer_failure(final: Any, password: str) -> None:
    """``final`` is the agent's honest failure naming the checkpointer, with the database's error, redacted."""
    meta = final.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "checkpointer_error"
    assert meta["error_class"] in ("OperationalError", "AdminShutdown"), meta["error"]
    assert str(final.content).strip() == (
        f'I could not answer "{QUESTION}" because the conversation store (the PostgreSQL checkpointer) failed '
        f"({meta['error_class']}). Please try again later."
    )
    assert password not in str(final.content) + str(meta)


async def test_a_database_that_is_down_ends_every_run_in_an_honest_failure(own_postgres, pg_url, castle_docs):
    """The thread cannot even be read: ainvoke and astream end in the failure message, nothing escapes."""
    with OpenAIServer(castle_script) as server:
        agent = await castle_agent(server, pg_url, castle_docs)
        graph = agent.get_compiled_graph()
        try:
            await ask(agent, "t1")
            answered = len(server.requests)
            own_postgres.halt()
            try:
                messages = await ask(agent, "t1")
                updates = [u async for u in graph.astream(
                    {"messages": [("user", QUESTION)]}, {"configurable": {"thread_id": "t1"}}, stream_mode="updates"
                )]  # fmt: skip
                model_calls = len(server.requests)
            finally:
                own_postgres.resume()
            after = await ask(agent, "t1")
        finally:
            await agent.aclose()
    assert [m.type for m in messages] == ["human", "ai"]  # the run's own input and its answer, nothing stored
    assert_checkpointer_failure(messages[-1], own_postgres.password)
    assert [list(u) for u in updates] == [["prepare"], ["finalize_failure"]]
    assert_checkpointer_failure(updates[-1]["finalize_failure"]["messages"][-1], own_postgres.password)
    assert model_calls == answered  # no model call while the database was down
    # the thread is intact once the database is back: the first turn and this one, not the failed ones
    assert len(after) == 4 and after[-1].content == ANSWER


async def test_a_database_that_stops_mid_run_ends_it_in_an_honest_failure(own_postgres, pg_url, castle_docs):
    """The model call that finds the database stopped: the checkpoint written after the step fails."""

    def stop_at_the_answer(body: dict[str, Any]) -> Any:
        if request_kind(body) == "answer" and not stopped:
            stopped.append(own_postgres.halt())
        return castle_script(body)

    stopped: list[None] = []
    with OpenAIServer(stop_at_the_answer) as server:
        agent = await castle_agent(server, pg_url, castle_docs)
        try:
            messages = await ask(agent, "t1")
        finally:
            own_postgres.resume()
            await agent.aclose()
    assert stopped
    assert_checkpointer_failure(messages[-1], own_postgres.password)


# --- the CLI: real processes, a knowledge base ingested once -------------------------------------------------


@pytest.fixture(scope="module")
def castle_kb(tmp_path_factory) -> Path:
    """A data directory holding the one-document castle knowledge base of the CLI tests."""
    return ingest_docs(
        tmp_path_factory.mktemp("castle"), {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412.\n"}
    )


def ask_cli(kb: Path, server: OpenAIServer, url: str) -> subprocess.CompletedProcess:
    env = cli_env(kb, RAGS_EXPERT_LLM__BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-faults",
                  RAGS_EXPERT_CHECKPOINTER__URL=url)  # fmt: skip
    return run_cli(["ask", QUESTION, "--thread", "t1", "-q"], env)


def test_ask_with_the_database_down_fails_in_one_line_naming_the_checkpointer(own_postgres, pg_url, castle_kb):
    with OpenAIServer(cli_castle_script) as server:
        own_postgres.halt()
        try:
            done = ask_cli(castle_kb, server, pg_url)
        finally:
            own_postgres.resume()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "error: CheckpointerError: the PostgreSQL checkpointer failed to connect: OperationalError: "
    )
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert own_postgres.password not in done.stderr and not server.requests  # failed at start, before the model


def test_ask_when_the_database_stops_mid_run_prints_the_honest_failure(own_postgres, pg_url, castle_kb):
    def stop_at_the_answer(body: dict[str, Any]) -> Any:
        if request_kind(body) == "answer" and not stopped:
            stopped.append(own_postgres.halt())
        return cli_castle_script(body)

    stopped: list[None] = []
    with OpenAIServer(stop_at_the_answer) as server:
        try:
            done = ask_cli(castle_kb, server, pg_url)
        finally:
            own_postgres.resume()
    assert stopped and done.returncode == 2
    # stderr holds the log records (as after a model fault): the fault, never a traceback or the password
    assert "ERROR run failed: the PostgreSQL checkpointer failed" in done.stderr
    assert "Traceback" not in done.stderr and own_postgres.password not in done.stderr + done.stdout
    assert done.stdout.strip() in (
        f'I could not answer "{QUESTION}" because the conversation store (the PostgreSQL checkpointer) failed '
        f"({error}). Please try again later."
        for error in ("OperationalError", "AdminShutdown")
    )


async def test_a_fred_turn_with_the_database_down_gets_freds_honest_failure_naming_the_checkpointer(
    own_postgres, pg_url, castle_docs
):
    """A Fred turn builds the agent (``turn_graph``: ``async_init`` opens the checkpointer) and runs its graph
    standalone, so the database is met only at the start; Fred's failure path (``fault_text``) answers the
    fault. The pod itself runs in tests/fred (Python 3.12); this is the same agent start and the same text."""
    from rags_expert.fred.turn import fault_text

    with OpenAIServer(castle_script) as server:
        settings = make_settings(server).model_copy(update={"checkpointer": CheckpointerSettings(url=pg_url)})
        own_postgres.halt()
        try:
            with pytest.raises(CheckpointerError) as failed:
                await RagsExpert(settings, retriever=KeywordRetriever(docs=castle_docs, calls=[])).async_init()
        finally:
            own_postgres.resume()
    text = fault_text(failed.value, settings.secrets())
    assert text.startswith(
        "I could not answer: the agent failed (CheckpointerError: the PostgreSQL checkpointer failed to connect: "
        "OperationalError: connection failed: "
    )
    assert own_postgres.password not in text and "\n" not in text
