"""The full RagsExpert graph with LangChain's real ChatOpenAI over HTTP to a local scripted server.

No mocks of openai/httpx: every model call is a real HTTP request to
``tests/helpers/openai_server.py`` on 127.0.0.1. Retry delays and timeouts are tiny so the
file runs in a few seconds.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.documents import KeywordRetriever
from helpers.openai_server import (
    OpenAIServer,
    Reply,
    error,
    held,
    malformed_json,
    rate_limited,
    request_kind,
    tag_content,
    text,
    tool,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessageChunk

from rags_expert import RagsExpert
from rags_expert.llm.chat import build_chat_model
from rags_expert.settings import RagsExpertSettings

pytestmark = pytest.mark.integration

API_KEY = "sk-test-SECRET123456"
QUESTION = "When was Castle Varen built?"
ANSWER = "Castle Varen was built in 1412 [1] on the river Mura [1]."
GRADER_KINDS = {"relevance", "grounded", "useful", "rephrase", "condense", "score"}


def castle_script(body: dict[str, Any]) -> Reply | str | dict[str, Any]:
    """Relevant: the castle and duke chunks; the answer cites chunk 1 only; the answer passes both checks."""
    kind = request_kind(body)
    if kind == "relevance":
        chunk = tag_content(body, "chunk")
        return {"relevant": "Castle Varen" in chunk or "Duke Albrecht ruled" in chunk}
    if kind == "grounded":
        return {"grounded": True, "unsupported": ""}
    if kind == "useful":
        return {"useful": True, "missing": ""}
    if kind == "rephrase":
        return {"query": "Varen castle construction"}
    if kind == "condense":
        return {"question": QUESTION}
    return ANSWER


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(castle_script) as srv:
        yield srv


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def make_settings(server: OpenAIServer, **over: Any) -> RagsExpertSettings:
    base = {
        "llm": {
            "base_url": server.base_url,
            "api_key": API_KEY,
            "timeout": 5.0,
            "max_retries": 2,
            "retry_base_delay": 0.01,
            "retry_max_delay": 0.02,
        },
        "grading": {"timeout": 5.0},
        "max_rephrases": 1,
        "max_generations": 2,
        # these tests are about the graders' requests: every answer goes past them (see the default's own test)
        "evidence": {"verify_answers": False},
    }
    return RagsExpertSettings(**_merge(base, over))


async def make_graph(server: OpenAIServer, docs: list[Document], **over: Any):
    settings = make_settings(server, **over)
    model = build_chat_model(settings.llm, client_timeout=settings.grading.timeout)  # as RagsExpert builds its own
    agent = RagsExpert(settings, chat_model=model, retriever=KeywordRetriever(docs=docs))
    await agent.async_init()
    return agent.get_compiled_graph()


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def ask(graph, question: str = QUESTION, thread: str = "t1"):
    out = await graph.ainvoke({"messages": [("user", question)]}, config(thread))
    return out["messages"][-1]


async def graded_chunks(graph, question: str = QUESTION, thread: str = "t1") -> tuple[dict[str, bool], Any]:
    """Run with stream_mode='updates'; return grade_documents' verdict per chunk id and the final message."""
    graded: dict[str, bool] = {}
    final = None
    async for update in graph.astream({"messages": [("user", question)]}, config(thread), stream_mode="updates"):
        for node, values in update.items():
            if node == "grade_documents" and values.get("graded"):
                graded.update(values["graded"])
            if node.startswith("finalize"):
                final = values["messages"][-1]
    return graded, final


def source_ids(message) -> list[str]:
    return [s["chunk_id"] for s in message.response_metadata["sources"]]


# --- happy paths ----------------------------------------------------------------------------------


async def test_happy_path_tool_call_graders(server, castle_docs):
    graph = await make_graph(server, castle_docs)

    final = await ask(graph)

    meta = final.response_metadata
    assert meta["outcome"] == "success"
    assert final.content == ANSWER
    # two chunks were relevant (castle = [1], duke = [2]) but only [1] is cited: sources are exactly the cited ones
    assert source_ids(final) == ["castle"]
    assert [s["n"] for s in meta["sources"]] == [1]
    kinds = [r.kind for r in server.requests]
    assert sorted(kinds) == sorted(["relevance"] * 4 + ["answer", "grounded", "useful"])
    assert meta["llm_calls"] == len(server.requests) == 7
    for req in server.requests:
        assert req.path == "/v1/chat/completions"
        if req.kind in GRADER_KINDS:  # a forced function call with capped output
            assert req.body["tool_choice"]["function"]["name"] == req.body["tools"][0]["function"]["name"]
            assert (req.body.get("max_tokens") or req.body.get("max_completion_tokens")) == 256
        else:
            assert "tools" not in req.body
    answer_req = server.of_kind("answer")[0]
    assert '<chunk n="1"' in answer_req.prompt and "Castle Varen was built in 1412" in answer_req.prompt
    assert "cheese" not in answer_req.prompt.lower()  # irrelevant chunks stay out of the context


async def test_by_default_a_quoting_answer_is_checked_by_the_evidence_in_one_round_trip(server, castle_docs):
    graph = await make_graph(server, castle_docs, evidence={"verify_answers": True})  # the default

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success" and final.content == ANSWER
    kinds = [r.kind for r in server.requests]
    assert sorted(kinds) == sorted(["relevance"] * 4 + ["answer"])  # no grounded / useful request
    assert final.response_metadata["llm_calls"] == len(server.requests) == 5
    assert RagsExpertSettings().evidence.verify_answers


@pytest.mark.parametrize("method", ["function_calling", "json_mode"])
async def test_legacy_max_tokens_puts_each_calls_own_cap_in_the_body(server, castle_docs, method):
    """For servers that read only max_tokens (llama-cpp-python): answer and grading caps both reach the body."""
    llm = {"max_tokens": 200, "legacy_max_tokens": True}
    graph = await make_graph(server, castle_docs, llm=llm, grading={"structured_output": method, "max_tokens": 32})

    assert (await ask(graph)).response_metadata["outcome"] == "success"
    for req in server.requests:
        cap = 32 if req.kind in GRADER_KINDS else 200
        assert req.body["max_tokens"] == req.body["max_completion_tokens"] == cap, req.kind
    json_mode = [r for r in server.requests if r.kind in GRADER_KINDS and "response_format" in r.body]
    assert bool(json_mode) == (method == "json_mode")  # the response format shares the body with the cap


async def test_legacy_max_tokens_caps_grading_calls_even_without_an_answer_cap(server, castle_docs):
    llm = {"legacy_max_tokens": True, "max_tokens": None}  # no answer cap (the default has one)
    graph = await make_graph(server, castle_docs, llm=llm, grading={"max_tokens": 32})

    assert (await ask(graph)).response_metadata["outcome"] == "success"
    assert all(r.body["max_tokens"] == 32 for r in server.requests if r.kind in GRADER_KINDS)
    assert all(r.body["max_tokens"] is None for r in server.requests if r.kind not in GRADER_KINDS)


async def test_without_legacy_max_tokens_only_the_current_cap_field_is_sent(server, castle_docs):
    graph = await make_graph(server, castle_docs, llm={"max_tokens": 200})

    assert (await ask(graph)).response_metadata["outcome"] == "success"
    assert all("max_tokens" not in r.body and r.body["max_completion_tokens"] for r in server.requests)


@pytest.mark.parametrize("method", ["json_schema", "json_mode"])
async def test_happy_path_json_response_formats(server, castle_docs, method):
    graph = await make_graph(server, castle_docs, grading={"structured_output": method})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    assert source_ids(final) == ["castle"]
    for req in server.requests:
        if req.kind in GRADER_KINDS:
            assert "tools" not in req.body
            assert req.body["response_format"]["type"] == ("json_schema" if method == "json_schema" else "json_object")


async def test_plain_text_grader_replies(server, castle_docs):
    def script(body):
        kind = request_kind(body)
        if kind == "relevance":
            return "Yes." if "Castle Varen" in tag_content(body, "chunk") else "NO"
        if kind == "grounded":
            return 'Here you go:\n```json\n{"grounded": true, "unsupported": ""}\n```'
        if kind == "useful":
            return "Yes, it answers the question."
        return ANSWER

    server.script = script
    graph = await make_graph(server, castle_docs, grading={"structured_output": "text"})

    graded, final = await graded_chunks(graph)

    assert graded == {"castle": True, "bridge": False, "duke": False, "cheese": False}
    assert final.response_metadata["outcome"] == "success"
    assert source_ids(final) == ["castle"]
    graders = [r for r in server.requests if r.kind in GRADER_KINDS]
    assert len(graders) == 6
    assert all("tools" not in r.body and "response_format" not in r.body for r in graders)


@pytest.mark.parametrize(
    ("arguments", "default_relevant", "expected"),
    [
        ('{"relevant": false', False, False),  # truncated JSON: the value is still readable
        ('{"relevant": false', True, False),
        ("relevant: no", True, False),  # a key: value line instead of JSON
        ("{'relevant': False,}", True, False),  # single quotes, trailing comma
        ("%%% <garbage>", False, False),  # nothing readable: the documented default
        ("%%% <garbage>", True, True),
    ],
)
async def test_malformed_tool_call_arguments_parse_tolerantly(
    server, castle_docs, arguments, default_relevant, expected
):
    def script(body):
        if request_kind(body) == "relevance" and "Castle Varen" not in tag_content(body, "chunk"):
            return tool("RelevanceGrade", arguments)  # function.arguments is not valid JSON
        return castle_script(body)

    server.script = script
    graph = await make_graph(server, castle_docs, grading={"default_relevant": default_relevant})

    graded, final = await graded_chunks(graph)

    assert graded == {"castle": True, "bridge": expected, "duke": expected, "cheese": expected}
    assert final.response_metadata["outcome"] == "success"
    assert len(server.of_kind("relevance")) == 4  # malformed replies are parsed, not retried


async def test_malformed_grader_replies_fall_back_to_default(server, castle_docs):
    """Unreadable answer checks mean 'not grounded' (default False): regenerate, then fail honestly."""

    def script(body):
        if request_kind(body) in ("grounded", "useful"):
            return tool(body["tools"][0]["function"]["name"], "{{{ not json")
        return castle_script(body)

    server.script = script
    graph = await make_graph(server, castle_docs, max_generations=2)

    final = await ask(graph)

    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert meta["reason"] == "not_grounded"
    assert "error" not in meta
    assert len(server.of_kind("answer")) == 2  # G = 2 generations, then stop


# --- transport faults -----------------------------------------------------------------------------


async def test_rate_limit_then_success_is_retried(server, castle_docs, caplog):
    server.enqueue(rate_limited(retry_after=1))  # the first request, whichever it is, gets a 429
    graph = await make_graph(server, castle_docs)

    with caplog.at_level(logging.WARNING, logger="rags_expert"):
        final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    assert source_ids(final) == ["castle"]
    statuses = [r.reply.status for r in server.requests]
    assert statuses.count(429) == 1
    assert len(server.requests) == 7 + 1  # one extra request: the retry
    limited = next(r for r in server.requests if r.reply.status == 429)
    retried = [r for r in server.requests if r.prompt == limited.prompt]
    assert [r.reply.status for r in retried] == [429, 200]
    assert any("RateLimitError" in rec.getMessage() for rec in caplog.records)


async def test_rate_limit_retry_waits_for_retry_after(server, castle_docs):
    server.enqueue(rate_limited(retry_after=0.3))
    graph = await make_graph(server, castle_docs, llm={"retry_max_delay": 1.0})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    limited = next(r for r in server.requests if r.reply.status == 429)
    retry = next(r for r in server.requests if r.prompt == limited.prompt and r is not limited)
    assert retry.at - limited.at >= 0.3  # the server's Retry-After, not our 10 ms backoff


async def test_persistent_500_ends_in_failure_naming_the_error(server, castle_docs):
    server.script = lambda body: error(500, "the model server crashed")
    graph = await make_graph(server, castle_docs, llm={"max_retries": 2})

    final = await ask(graph)

    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert meta["reason"] == "llm_error"
    assert meta["error_class"] == "InternalServerError"
    assert "InternalServerError" in final.content
    assert meta["sources"] == []
    # 4 chunks graded concurrently, each tried 1 + max_retries times; nothing after grading
    assert len(server.of_kind("relevance")) == 4 * 3
    assert server.of_kind("answer") == []


async def test_500_on_the_answer_only(server, castle_docs):
    server.script = lambda body: error(500) if request_kind(body) == "answer" else castle_script(body)
    graph = await make_graph(server, castle_docs, llm={"max_retries": 1})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "failure"
    assert final.response_metadata["error_class"] == "InternalServerError"
    assert len(server.of_kind("answer")) == 2


class ModelStarts(BaseCallbackHandler):
    """Counts the chat-model requests the agent starts, by tag (inline: counted before any await can time out)."""

    run_inline = True

    def __init__(self) -> None:
        self.tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, tags: list[str] | None = None, **kw: Any) -> None:
        self.tags.append(list(tags or []))


async def test_slow_grader_times_out_retries_then_fails(server, castle_docs):
    """The grader never answers (its requests are held, whatever the machine's load): every grading call times out,
    is retried once, and the run ends in an honest failure. The attempts are counted where the agent makes them, so
    the count does not depend on how fast the requests reach the server."""

    def script(body):
        reply = castle_script(body)
        return held(tool("RelevanceGrade", reply)) if request_kind(body) == "relevance" else reply

    server.script = script
    graph = await make_graph(server, castle_docs, grading={"timeout": 0.05}, llm={"max_retries": 1})
    starts = ModelStarts()

    out = await graph.ainvoke({"messages": [("user", QUESTION)]}, {**config(), "callbacks": [starts]})
    final = out["messages"][-1]

    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert meta["reason"] == "llm_error"
    assert "Timeout" in meta["error_class"]
    grading_calls = [t for t in starts.tags if "rags_expert:grading" in t]
    assert len(grading_calls) == len(starts.tags) == 4 * 2  # each chunk: first try + one retry, nothing after
    assert all(r.answered_at is None for r in server.requests)  # none was answered


async def test_slow_answer_times_out_retries_then_fails(server, castle_docs):
    """The answer is never sent (held): its call times out, is retried once, and the run fails honestly."""
    server.script = lambda body: held(ANSWER) if request_kind(body) == "answer" else castle_script(body)
    graph = await make_graph(server, castle_docs, llm={"timeout": 0.05, "max_retries": 1})
    starts = ModelStarts()

    out = await graph.ainvoke({"messages": [("user", QUESTION)]}, {**config(), "callbacks": [starts]})
    final = out["messages"][-1]

    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert "Timeout" in meta["error_class"]
    assert len([t for t in starts.tags if "rags_expert:grading" not in t]) == 2  # the answer: first try + retry


@pytest.mark.slow
async def test_one_slow_answer_then_success(server, castle_docs):
    """The first answer is never sent (held); the retry is answered within the timeout and the run succeeds."""
    answers = []

    def script(body):
        if request_kind(body) == "answer":
            answers.append(1)
            return held(ANSWER) if len(answers) == 1 else ANSWER
        return castle_script(body)

    server.script = script
    # the timeout only has to outlast one scripted reply on 127.0.0.1: the held one never comes
    graph = await make_graph(server, castle_docs, llm={"timeout": 2.0})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    assert final.content == ANSWER
    assert len(server.of_kind("answer")) == 2


@pytest.mark.parametrize("kind", ["answer", "relevance"])
async def test_malformed_json_body_ends_in_failure(server, castle_docs, kind):
    server.script = lambda body: malformed_json() if request_kind(body) == kind else castle_script(body)
    graph = await make_graph(server, castle_docs)

    final = await ask(graph)

    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert meta["reason"] == "llm_error"
    assert meta["error_class"]
    assert "Traceback" not in final.content


# --- secrets --------------------------------------------------------------------------------------


async def test_api_key_is_sent_but_never_leaks(server, castle_docs, caplog):
    """The key goes out in the Authorization header, and nowhere else: not in messages,
    metadata, any checkpointed state, or logs, even when the server echoes it in an error."""
    calls = {"answer": 0}

    def script(body):
        if request_kind(body) == "answer":
            calls["answer"] += 1
            if calls["answer"] > 1:  # second question: the server echoes the key in its errors
                return error(500 if calls["answer"] < 4 else 401, f"bad request from Authorization: Bearer {API_KEY}")
        return castle_script(body)

    server.script = script
    graph = await make_graph(server, castle_docs, llm={"max_retries": 1})

    with caplog.at_level(logging.DEBUG):
        first = await ask(graph)
        second = await ask(graph, "When was Castle Varen built? Once more please.")  # 500, 500
        third = await ask(graph, "And when exactly was Castle Varen built?")  # 401: not retried

    assert first.response_metadata["outcome"] == "success"
    assert second.response_metadata["outcome"] == "failure"
    assert second.response_metadata["error_class"] == "InternalServerError"
    assert third.response_metadata["error_class"] == "AuthenticationError"
    assert [r.reply.status for r in server.of_kind("answer")] == [200, 500, 500, 401]
    # the key really was in what the client received
    assert any(r.reply and API_KEY in r.reply.error_message for r in server.requests)
    # ... and was sent on every request
    assert server.requests and all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in server.requests)

    for message in (first, second, third):
        assert API_KEY not in message.content
        assert API_KEY not in json.dumps(message.response_metadata, default=str)
    snapshots = [snap async for snap in graph.aget_state_history(config())]
    assert len(snapshots) > 10
    for snap in snapshots:
        assert API_KEY not in repr(snap.values)
        assert API_KEY not in repr(snap.metadata)
        assert API_KEY not in repr(snap.tasks)
    assert caplog.records  # DEBUG logging really captured the run (openai/httpx/rags_expert)
    assert API_KEY not in caplog.text
    for rec in caplog.records:
        assert API_KEY not in rec.getMessage()
        assert API_KEY not in repr(rec.args)


# --- streaming ------------------------------------------------------------------------------------


async def test_streaming_over_sse_yields_answer_tokens_only(server, castle_docs):
    graph = await make_graph(server, castle_docs)

    tokens: list[AIMessageChunk] = []
    token_nodes: set[str] = set()
    updates: list[str] = []
    async for mode, payload in graph.astream(
        {"messages": [("user", QUESTION)]}, config(), stream_mode=["messages", "updates"]
    ):
        if mode == "messages":
            message, meta = payload
            if isinstance(message, AIMessageChunk):
                tokens.append(message)
                token_nodes.add(meta["langgraph_node"])
        else:
            updates.extend(payload.keys())

    assert token_nodes == {"generate"}  # no grader tokens reach the host
    assert "".join(t.content for t in tokens) == ANSWER
    assert len([t for t in tokens if t.content]) == len(ANSWER.split(" "))  # one SSE delta per word
    assert updates == ["prepare", "retrieve", "grade_documents", "generate", "grade_generation", "finalize_success"]
    # every call really went over SSE, graders (tool-call deltas) included
    assert all(r.body.get("stream") is True for r in server.requests)
    assert {r.kind for r in server.requests} == {"relevance", "answer", "grounded", "useful"}


async def test_grading_is_concurrent_on_the_server(server, castle_docs):
    server.delay = 0.2  # every call takes 200 ms: overlapping requests are visible server-side
    graph = await make_graph(server, castle_docs, grading={"concurrency": 8})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    relevance = server.of_kind("relevance")
    assert len(relevance) == 4
    assert server.max_in_flight == 4  # all four gradings were in flight at once (none waited for another)


async def test_grading_concurrency_caps_the_gradings_in_flight(server, castle_docs):
    """``grading.concurrency`` 2: the four relevance gradings reach the server two at a time, never more."""
    server.delay = 0.2
    graph = await make_graph(server, castle_docs, grading={"concurrency": 2})

    final = await ask(graph)

    assert final.response_metadata["outcome"] == "success"
    assert len(server.of_kind("relevance")) == 4
    assert server.max_in_flight == 2


async def test_rephrase_round_over_http(server, castle_docs):
    """Nothing relevant at first: the query is rephrased over HTTP and retrieval runs again."""
    rephrased = []

    def script(body):
        kind = request_kind(body)
        if kind == "rephrase":
            rephrased.append(1)
            return {"query": "Castle Varen built 1412"}
        if kind == "relevance" and not rephrased:
            return {"relevant": False}
        return castle_script(body)

    server.script = script
    graph = await make_graph(server, castle_docs, retrieval={"top_k": 2})

    final = await ask(graph, "When was the fortress erected?")

    assert final.response_metadata["outcome"] == "success"
    assert len(server.of_kind("rephrase")) == 1
    assert final.response_metadata["llm_calls"] == len(server.requests)


def test_text_reply_helper_sanity():
    assert text("a b").content == "a b"
    assert error(429, retry_after=2).headers == {"Retry-After": "2"}


def test_a_request_abandoned_before_its_body_is_neither_recorded_nor_answered(server):
    """A client whose timeout cancels a request between its headers and its body (httpx writes them separately)
    closes the connection: the server never answers it, and it is no request of any kind (read as an empty body it
    was an 'answer' request, answered, and test_slow_grader_times_out_retries_then_fails failed under load)."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(head + b"Content-Length: 64\r\n\r\n")
        sock.shutdown(socket.SHUT_WR)  # the body never comes
        assert sock.recv(4096) == b""  # closed without a reply
    assert server.requests == []
    assert server.incomplete == 1
