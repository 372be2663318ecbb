"""Answer-time authorization through ``ainvoke``: a scripted model, the keyword retriever, in-process hooks
(a callable passed to the agent, sync or async, or one named in the settings)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.permissions import PermissionTable
from helpers.scripts import Script

from rags_expert import RagsExpert
from rags_expert.rag.authorization import AuthorizationConfigError
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

VAREN = "Castle Varen was built in 1412 by Duke Albrecht."
SECRET = "Castle Varen hides a vault of nine hundred crowns."
DOCS = make_docs({"varen": VAREN, "secret": SECRET})
QUESTION = "What is known about Castle Varen?"


def cite_every_chunk(text: str) -> str:
    """An answer quoting every chunk of its context, each cited."""
    chunks = re.findall(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', text, re.DOTALL)
    return " ".join(f"{body.strip().rstrip('.')} [{n}]." for n, body in chunks) or "Nothing to say."


def settings(tmp_path: Path, **extra: Any) -> RagsExpertSettings:
    return RagsExpertSettings(
        store={"data_dir": str(tmp_path / "qdrant")}, lessons={"enabled": False}, max_rephrases=0, **extra
    )


def script(**kw: Any) -> Script:
    return Script(
        relevance=kw.pop("relevance", lambda q, c: "yes"),
        relevance_batch=lambda text: '{"relevant": [1, 2]}',
        generate=kw.pop("generate", cite_every_chunk),
        **kw,
    )


async def ask(agent: RagsExpert, question: str = QUESTION, **configurable: Any) -> Any:
    graph = agent.get_compiled_graph()
    config = {"configurable": {"thread_id": configurable.pop("thread_id", "t"), **configurable}}
    return (await graph.ainvoke({"messages": [("user", question)]}, config))["messages"][-1]


async def agent_for(tmp_path: Path, model: ScriptedChatModel, hook: Any = None, **extra: Any) -> RagsExpert:
    retriever = KeywordRetriever(docs=DOCS)
    return await RagsExpert(
        settings(tmp_path, **extra), chat_model=model, retriever=retriever, authorize=hook
    ).async_init()


def prompts(model: ScriptedChatModel) -> str:
    return "\n".join(str(call) for call in model.calls)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_denied_chunk_is_never_graded_drafted_or_cited(tmp_path, kind):
    table = PermissionTable(grants={"alice": {"varen"}})
    model = ScriptedChatModel(responder=script())
    agent = await agent_for(
        tmp_path, model, table.allowed if kind == "sync" else table.aallowed, speculative_draft=True
    )
    events, final = [], None
    config = {"configurable": {"thread_id": "d", "user_id": "alice"}}
    async for mode, chunk in agent.get_compiled_graph().astream(
        {"messages": [("user", QUESTION)]}, config, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk["messages"][-1]
    assert [e["event"] for e in events if e["event"].startswith("draft")] == ["draft_kept"]
    assert "crowns" not in str(events)
    assert final.response_metadata["outcome"] == "success"
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["varen"]
    assert "crowns" not in final.content and "crowns" not in prompts(model)  # no call ever saw it
    assert [c.user for c in table.checks[""]] == ["alice"] * len(table.checks[""])


async def test_the_request_user_comes_from_the_context_too(tmp_path):
    table = PermissionTable(grants={"bob": {"varen", "secret"}})
    agent = await agent_for(tmp_path, ScriptedChatModel(responder=script()), table.allowed)
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [("user", QUESTION)]}, {"configurable": {"thread_id": "c"}}, context={"user_id": "bob"}
    )
    final = out["messages"][-1]
    assert {s["uid"] for s in final.response_metadata["sources"]} == {"varen", "secret"}
    assert {c.user for c in table.checks[""]} == {"bob"}


async def test_a_chunk_revoked_after_grading_is_dropped_before_the_answer_call(tmp_path):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})

    def relevance(question: str, chunk: str) -> str:
        table.revoke("alice", "secret")  # while the chunks are graded
        return "yes"

    model = ScriptedChatModel(responder=script(relevance=relevance))
    agent = await agent_for(tmp_path, model, table.allowed, speculative_draft=False)
    final = await ask(agent, user_id="alice")
    assert final.response_metadata["outcome"] == "success"
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["varen"]
    answer_prompts = [str(c) for c in model.calls if "<chunk" in str(c) and "relevant" not in str(c)]
    assert answer_prompts and all("crowns" not in p for p in answer_prompts)


async def test_a_kept_draft_over_a_chunk_revoked_while_graded_is_written_anew(tmp_path):
    """The speculative draft was written over both chunks while they were graded; one is revoked meanwhile. The
    draft, numbered over the revoked chunk, is discarded and the answer is written from the readable one."""
    table = PermissionTable(grants={"alice": {"varen", "secret"}})

    def relevance(question: str, chunk: str) -> str:
        table.revoke("alice", "secret")
        return "yes"

    model = ScriptedChatModel(responder=script(relevance=relevance))
    agent = await agent_for(tmp_path, model, table.allowed, speculative_draft=True)
    final = await ask(agent, user_id="alice")
    assert final.response_metadata["outcome"] == "success"
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["varen"]
    assert "crowns" not in final.content and "crowns" not in str(final.response_metadata)


async def test_a_cited_chunk_revoked_before_the_final_check_withholds_the_answer(tmp_path):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})

    def grounded(text: str) -> str:
        table.revoke("alice", "secret")  # after the answer was written, before it is given
        return "yes"

    model = ScriptedChatModel(responder=script(grounded=grounded))
    agent = await agent_for(tmp_path, model, table.allowed)
    final = await ask(agent, user_id="alice")
    meta = final.response_metadata
    assert (meta["outcome"], meta["reason"], meta["sources"]) == ("failure", "not_authorized", [])
    assert "crowns" not in final.content and "1412" not in final.content


@pytest.mark.parametrize("fault", [RuntimeError("db down"), None, 42])
async def test_a_failing_hook_fails_closed(tmp_path, fault):
    def hook(user: str | None, uids: list[str]) -> Any:
        if isinstance(fault, BaseException):
            raise fault
        return fault  # not a list of uids

    model = ScriptedChatModel(responder=script())
    agent = await agent_for(tmp_path, model, hook)
    final = await ask(agent, user_id="alice")
    meta = final.response_metadata
    assert (meta["outcome"], meta["reason"], meta["sources"]) == ("failure", "authorization_error", [])
    assert "permission check" in final.content
    assert "1412" not in final.content and "crowns" not in final.content
    assert "db down" not in str(meta)
    assert not [c for c in model.calls if "<chunk" in str(c)]  # nothing was graded or answered


async def test_a_followup_is_not_condensed_against_an_answer_citing_a_revoked_chunk(tmp_path):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})
    model = ScriptedChatModel(responder=script())
    agent = await agent_for(tmp_path, model, table.allowed)
    first = await ask(agent, thread_id="f", user_id="alice")
    assert "crowns" in first.content  # the first answer cited the vault
    table.revoke("alice", "secret")
    seen = len(model.calls)
    await ask(agent, "And who built it?", thread_id="f", user_id="alice")
    condense = [str(c) for c in model.calls[seen:] if '{"question":' in str(c)]
    assert condense and all("crowns" not in c for c in condense)
    assert all("crowns" not in str(c) for c in model.calls[seen:])


async def test_a_followup_keeps_answers_whose_sources_are_still_readable(tmp_path):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})
    model = ScriptedChatModel(responder=script())
    agent = await agent_for(tmp_path, model, table.allowed)
    await ask(agent, thread_id="g", user_id="alice")
    seen = len(model.calls)
    await ask(agent, "And who built it?", thread_id="g", user_id="alice")
    condense = [str(c) for c in model.calls[seen:] if '{"question":' in str(c)]
    assert condense and "crowns" in condense[0]


async def test_a_hook_named_in_the_settings_is_imported(tmp_path):
    model = ScriptedChatModel(responder=script())
    agent = await agent_for(tmp_path, model, authorization={"hook": "helpers.permissions:deny_secret"})
    final = await ask(agent)
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["varen"]
    assert "crowns" not in prompts(model)


def test_a_hook_that_cannot_be_imported_is_a_one_line_error(tmp_path):
    with pytest.raises(AuthorizationConfigError, match=r"^authorization.hook='helpers.permissions:nope' cannot be"):
        RagsExpert(settings(tmp_path, authorization={"hook": "helpers.permissions:nope"}))


def test_the_settings_take_one_hook_kind():
    with pytest.raises(ValueError, match="not both"):
        RagsExpertSettings(authorization={"hook": "a.b:c", "url": "http://127.0.0.1:1/"})
    with pytest.raises(ValueError, match="package.module:function"):
        RagsExpertSettings(authorization={"hook": "not a path"})


async def test_langgraph_servers_authenticated_user_wins_over_the_clients_user_id(tmp_path):
    table = PermissionTable(grants={"alice": {"varen"}, "mallory": {"varen", "secret"}})
    agent = await agent_for(tmp_path, ScriptedChatModel(responder=script()), table.allowed)
    final = await ask(agent, user_id="mallory", langgraph_auth_user_id="alice")
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["varen"]
    assert {c.user for c in table.checks[""]} == {"alice"}


LESSON = "Read the vault ledger before answering about Castle Varen."


def lesson_script(useful: list[str]) -> Script:
    """Answers every chunk; the first answers are judged not useful (a lesson is written), later ones useful."""

    def answer(text: str) -> str:
        return LESSON if "<failed_attempt>" in text else cite_every_chunk(text)

    return script(generate=answer, useful=lambda text: useful.pop(0) if useful else "yes")


@pytest.mark.parametrize("revoked", [False, True])
async def test_a_lesson_learnt_from_a_revoked_chunk_is_not_recalled(tmp_path, revoked):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})
    model = ScriptedChatModel(responder=lesson_script(['{"useful": false, "reason": "incomplete"}'] * 3))
    retriever = KeywordRetriever(docs=DOCS)
    s = RagsExpertSettings(
        store={"data_dir": str(tmp_path / "qdrant")},
        lessons={"enabled": True, "min_similarity": 0.0},
        max_rephrases=0,
        max_generations=1,
    )
    agent = await RagsExpert(s, chat_model=model, retriever=retriever, authorize=table.allowed).async_init()
    try:
        await ask(agent, thread_id="l1", user_id="alice")  # rejected: the lesson is written
        assert agent.lesson_memory.count() == 1
        if revoked:
            table.revoke("alice", "secret")
        seen = len(model.calls)
        graph = agent.get_compiled_graph()
        config = {"configurable": {"thread_id": "l2", "user_id": "alice"}}
        events = [
            chunk async for chunk in graph.astream({"messages": [("user", QUESTION)]}, config, stream_mode="custom")
        ]
    finally:
        from rags_expert.retrieval.qdrant import close_client

        close_client(s.store)
    recalled = [e["lessons"] for e in events if e["event"] == "lesson_recalled"]
    shown = [str(c) for c in model.calls[seen:] if "<lessons>" in str(c)]
    if revoked:
        assert recalled == [[]] and shown == []
    else:
        assert recalled == [[LESSON]] and shown


async def test_a_fred_history_is_condensed_only_against_answers_whose_sources_are_readable(tmp_path):
    """Fred carries the history as text; our turn state keeps each answer's cited uids beside it
    (``history_uids``): an answer citing a revoked chunk, or one whose sources are unknown, is left out."""
    from types import SimpleNamespace

    from rags_expert.fred.turn import conversation

    turns = [
        SimpleNamespace(user_message="First?", agent_response="An old answer about the moat."),  # sources unknown
        SimpleNamespace(user_message="Vault?", agent_response="The vault holds nine hundred crowns [1]."),
        SimpleNamespace(user_message="Built?", agent_response="It was built in 1412 [1]."),
    ]
    messages = conversation(turns, "And who built it?", [["secret"], ["varen"]])
    table = PermissionTable(grants={"alice": {"varen"}})
    model = ScriptedChatModel(responder=script())
    agent = await agent_for(tmp_path, model, table.allowed)
    graph = agent.get_standalone_graph()  # what the Fred turn runs
    await graph.ainvoke({"messages": messages}, {"configurable": {"thread_id": "fred", "user_id": "alice"}})
    condense = [str(c) for c in model.calls if '{"question":' in str(c)]
    assert len(condense) == 1
    assert "built in 1412" in condense[0]
    assert "crowns" not in condense[0] and "moat" not in condense[0]
    assert "Vault?" in condense[0]  # the user's own turns stay


@pytest.mark.parametrize("revoked", [False, True])
async def test_a_partial_answer_is_offered_only_while_its_chunks_are_readable(tmp_path, revoked):
    table = PermissionTable(grants={"alice": {"varen", "secret"}})

    def useful(text: str) -> str:
        if revoked:
            table.revoke("alice", "secret")
        return '{"useful": false, "reason": "the builder is missing"}'

    model = ScriptedChatModel(responder=script(useful=useful))
    agent = await agent_for(tmp_path, model, table.allowed, max_generations=1)
    final = await ask(agent, user_id="alice")
    meta = final.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "not_useful"
    if revoked:
        assert meta["sources"] == [] and "crowns" not in final.content and "1412" not in final.content
    else:
        assert {s["uid"] for s in meta["sources"]} == {"varen", "secret"} and "crowns" in final.content


async def test_the_fallback_sources_chunks_are_checked_too(tmp_path):
    table = PermissionTable(grants={"alice": {"varen", "fb-varen"}})
    fallback_docs = make_docs({"fb-varen": "Castle Varen's chapel dates from 1420.", "fb-secret": SECRET})
    model = ScriptedChatModel(responder=script(relevance=lambda q, c: "no" if "Duke" in c else "yes"))
    primary = KeywordRetriever(docs=make_docs({"varen": VAREN}))
    agent = await RagsExpert(
        settings(tmp_path),
        chat_model=model,
        retriever=primary,
        fallback_retriever=KeywordRetriever(docs=fallback_docs),
        authorize=table.allowed,
    ).async_init()
    final = await ask(agent, user_id="alice")
    assert [s["uid"] for s in final.response_metadata["sources"]] == ["fb-varen"]
    assert "crowns" not in prompts(model)


async def test_langgraph_servers_authenticated_user_wins_over_the_clients_context(tmp_path):
    table = PermissionTable(grants={"alice": {"varen"}, "mallory": {"varen", "secret"}})
    agent = await agent_for(tmp_path, ScriptedChatModel(responder=script()), table.allowed)
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [("user", QUESTION)]},
        {"configurable": {"thread_id": "ctx", "langgraph_auth_user_id": "alice"}},
        context={"user_id": "mallory"},
    )
    assert [s["uid"] for s in out["messages"][-1].response_metadata["sources"]] == ["varen"]
    assert {c.user for c in table.checks[""]} == {"alice"}


@pytest.mark.parametrize("revoked", [False, True])
async def test_closest_passages_are_offered_only_while_their_chunks_are_readable(revoked):
    from rags_expert.rag.authorization import Authorizer
    from rags_expert.rag.wrappers.guard import guard_partial

    table = PermissionTable(grants={"alice": {"varen"} if revoked else {"varen", "secret"}})
    seen = []

    async def finalize(state):
        seen.append(state)
        return {}

    state = {"user": "alice", "relevant": DOCS, "closest": [{"quote": SECRET, "n": 2}, {"quote": VAREN, "n": 1}]}
    await guard_partial(finalize, Authorizer(table.allowed, timeout=5.0))(state)
    assert seen[0]["closest"] == ([] if revoked else state["closest"])
