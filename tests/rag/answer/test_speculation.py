"""The speculative answer (a draft written while the chunks are graded) and batch grading.

Graph tests with the scripted model (the calls each path makes, what is kept, what the host sees), and one
over real HTTP with LangChain's ChatOpenAI showing the draft overlaps the grading on the server.
"""

from __future__ import annotations

import re
import threading

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.openai_server import OpenAIServer, gated, prompt_text, request_kind, requested_tool, tag_content, tool
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.rag.answer.speculation import DRAFT_TAG, kept_draft
from rags_expert.testing import ScriptedChatModel

DOCS = {
    "castle": "Castle Varen was built in 1412 on the river Mura.",
    "bridge": "The Mura bridge was completed in 1890.",
    "duke": "Duke Albrecht ruled Castle Varen from 1430.",
}


def relevant_if(*facts: str):
    return lambda question, chunk: "yes" if any(f in chunk for f in facts) else "no"


def context_numbers(prompt: str) -> dict[str, int]:
    """Chunk title -> its number in an answer prompt."""
    return {title: int(n) for n, title in re.findall(r'<chunk n="(\d+)" title="([^"]+)"', prompt)}


def citing(title: str, text: str):
    """An answer writer citing whichever number chunk ``title`` has in the prompt it gets."""
    prompts: list[str] = []

    def write(prompt: str) -> str:
        prompts.append(prompt)
        return f"{text} [{context_numbers(prompt)[title]}]."

    write.prompts = prompts  # type: ignore[attr-defined]
    return write


async def ask(script: Script, question: str = "When was Castle Varen built?", stream=None, **settings):
    model = ScriptedChatModel(responder=script)
    base = {"llm": {"max_retries": 0}, "speculative_draft": True}
    agent = await RagsExpert(
        {**base, **settings}, chat_model=model, retriever=KeywordRetriever(docs=make_docs(DOCS), calls=[])
    ).async_init()
    graph = agent.get_compiled_graph()
    config = {"configurable": {"thread_id": "t"}}
    events, tokens, final = [], [], None
    async for mode, chunk in graph.astream(
        {"messages": [HumanMessage(question)]}, config, stream_mode=["custom", "messages", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        elif mode == "messages":
            tokens.append(chunk)
        else:
            final = chunk["messages"][-1]
    return final, events, tokens, model


async def test_a_draft_citing_relevant_chunks_is_kept_and_checked_without_a_second_answer_call():
    write = citing("castle", "Castle Varen was built in 1412")
    script = Script(relevance=relevant_if("1412"), generate=write)
    final, events, _, model = await ask(script)
    assert final.response_metadata["outcome"] == "success"
    assert final.content == "Castle Varen was built in 1412 [1]."
    assert [s["title"] for s in final.response_metadata["sources"]] == ["castle"]
    # the draft saw every retrieved chunk; no answer call over the relevant ones followed
    assert len(write.prompts) == 1 and set(context_numbers(write.prompts[0])) == set(DOCS)
    # it quotes its chunk: the evidence checks it (evidence.verify_answers), no check call
    assert script.seen.count("generate") == 1 and script.count("grounded") == 0 and script.count("useful") == 0
    assert final.response_metadata["llm_calls"] == len(model.calls) == 3 + 1
    assert [e["event"] for e in events] == ["draft_kept", "answer_verified"]


async def test_a_kept_draft_is_renumbered_to_the_relevant_chunks():
    # the relevant chunk is not the first retrieved one: the draft's [n] must become the context's [1]
    drafts = citing("bridge", "The Mura bridge was completed in 1890")
    script = Script(relevance=relevant_if("1890"), generate=drafts)
    final, _, _, _ = await ask(script, "When was Castle Varen built?")
    numbers = context_numbers(drafts.prompts[0])
    assert numbers["bridge"] != 1  # the bridge chunk was not first among the retrieved ones
    assert final.content == "The Mura bridge was completed in 1890 [1]."
    assert [s["title"] for s in final.response_metadata["sources"]] == ["bridge"]


async def test_a_draft_citing_an_irrelevant_chunk_is_discarded_and_never_shown():
    answers = iter(["The bridge dates from 1890 [{bridge}].", "Castle Varen was built in 1412 [{castle}]."])

    def write(prompt: str) -> str:
        return next(answers).format(**{**dict.fromkeys(DOCS, 0), **context_numbers(prompt)})

    script = Script(relevance=relevant_if("1412"), generate=write)
    final, events, tokens, model = await ask(script)
    assert final.content == "Castle Varen was built in 1412 [1]."
    assert "1890" not in final.content and [s["title"] for s in final.response_metadata["sources"]] == ["castle"]
    discarded = [e for e in events if e["event"] == "draft_discarded"]
    assert len(discarded) == 1 and "graded irrelevant" in discarded[0]["reason"]
    # the discarded draft streamed from grade_documents, tagged; the answer from generate
    draft_tokens = "".join(m.content for m, meta in tokens if meta["langgraph_node"] == "grade_documents")
    answer_tokens = "".join(m.content for m, meta in tokens if meta["langgraph_node"] == "generate")
    assert "1890" in draft_tokens and "1890" not in answer_tokens
    assert all(DRAFT_TAG in meta.get("tags", []) for m, meta in tokens if meta["langgraph_node"] == "grade_documents")
    assert answer_tokens == "Castle Varen was built in 1412 [1]."
    assert final.response_metadata["llm_calls"] == len(model.calls) == 3 + 1 + 1  # the answer checked by the evidence


async def test_an_uncited_or_failed_draft_is_discarded_and_the_run_goes_on():
    for first in ("Castle Varen was built in 1412.", RuntimeError("the draft call broke")):
        answers = iter([first, "Castle Varen was built in 1412 [1]."])
        script = Script(relevance=relevant_if("1412"), generate=lambda t, a=answers: next(a))
        final, events, _, _ = await ask(script)
        assert (
            final.content == "Castle Varen was built in 1412 [1]." and final.response_metadata["outcome"] == "success"
        )
        reason = [e["reason"] for e in events if e["event"] == "draft_discarded"]
        assert reason == [
            "the draft cites no chunk" if isinstance(first, str) else "the draft call failed (LLMCallError)"
        ]


async def test_no_draft_when_switched_off_or_after_the_first_retrieval():
    script = Script(relevance=relevant_if("1412"), generate=lambda t: "Castle Varen was built in 1412 [1].")
    final, events, _, model = await ask(script, speculative_draft=False)
    assert final.response_metadata["outcome"] == "success" and [e["event"] for e in events] == ["answer_verified"]
    assert len(model.calls) == 3 + 1  # 3 grades, then the answer (checked by the evidence)

    # nothing relevant at first: the draft is discarded; the rephrased round does not draft again
    script = Script(
        relevance=relevant_if("Albrecht"),
        rephrase=lambda t: '{"query": "Duke Albrecht ruled"}',
        generate=lambda t: "Duke Albrecht ruled Castle Varen [1].",
    )
    final, events, _, _ = await ask(script, retrieval={"top_k": 1})
    assert final.response_metadata["outcome"] == "success"
    assert [s["title"] for s in final.response_metadata["sources"]] == ["duke"]
    assert [e["event"] for e in events] == ["draft_discarded"] and script.count("rephrase") == 1
    assert script.count("generate") == 2  # the discarded draft, then one answer over the duke chunk


def test_kept_draft_rules():
    docs = make_docs(DOCS)
    castle, bridge, duke = docs
    assert kept_draft("A [1] and B [3].", docs, [castle, duke]) == "A [1] and B [2]."
    assert kept_draft("A [3, 1].", docs, [duke, castle]) == "A [1, 2]."
    assert kept_draft("A [2].", docs, [castle, duke]) is None  # cites an irrelevant chunk
    assert kept_draft("A without citation.", docs, docs) is None
    assert kept_draft("   ", docs, docs) is None
    assert kept_draft("`x[1]` is code; fact [1].", docs, [castle]) == "`x[1]` is code; fact [1]."


async def test_batch_grading_is_one_call_and_falls_back_when_its_reply_is_unreadable():
    def batch(prompt: str) -> str:
        return '{"relevant": [%d]}' % context_numbers_in_batch(prompt)["1412"]

    script = Script(generate=lambda t: "Castle Varen was built in 1412 [1].")
    script.relevance_batch = batch  # type: ignore[attr-defined]
    final, _, _, model = await ask(script, speculative_draft=False, grading={"batch": True})
    assert final.content == "Castle Varen was built in 1412 [1]."
    assert script.count("relevance_batch") == 1 and script.count("relevance") == 0
    assert len(model.calls) == final.response_metadata["llm_calls"] == 1 + 1

    script = Script(relevance=relevant_if("1412"), generate=lambda t: "Castle Varen was built in 1412 [1].")
    script.relevance_batch = lambda prompt: "I think the first one, maybe."  # type: ignore[attr-defined]
    final, _, _, model = await ask(script, speculative_draft=False, grading={"batch": True})
    assert final.content == "Castle Varen was built in 1412 [1]."
    assert script.count("relevance_batch") == 1 and script.count("relevance") == 3  # one call per chunk after
    assert len(model.calls) == final.response_metadata["llm_calls"] == 1 + 3 + 1

    script = Script(generate=lambda t: "Castle Varen was built in 1412 [1].")
    script.relevance_batch = lambda prompt: "[]"  # type: ignore[attr-defined]
    final, _, _, _ = await ask(script, speculative_draft=False, grading={"batch": True}, max_rephrases=0)
    assert final.response_metadata["outcome"] == "failure" and script.count("relevance") == 0


def context_numbers_in_batch(prompt: str) -> dict[str, int]:
    """Fact -> the number of the chunk holding it in a batch grading prompt."""
    out = {}
    for n, body in re.findall(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', prompt, re.S):
        for fact in ("1412", "1890", "Albrecht"):
            if fact in body:
                out[fact] = int(n)
    return out


@pytest.mark.integration
async def test_over_http_the_draft_overlaps_the_grading():
    """The grading replies are held until the draft's request arrives, so the run succeeds only when the draft is
    sent with the grading calls, not after their replies; the checks are sent after the grading replies. Both are
    orders of events, whatever the machine's speed."""
    draft_sent = threading.Event()

    def script(body):
        kind = request_kind(body)
        if kind == "relevance":
            verdict = {"relevant": "1412" in tag_content(body, "chunk")}
            return gated(tool(requested_tool(body) or "RelevanceGrade", verdict), draft_sent)
        if kind in ("grounded", "useful"):
            return {kind: True, "unsupported": "", "missing": ""}
        draft_sent.set()
        numbers = re.findall(r'<chunk n="(\d+)"[^>]*>\n[^\n]*1412', prompt_text(body))
        return f"Castle Varen was built in 1412 [{numbers[0]}]."

    with OpenAIServer(script) as server:
        settings = {  # without the overlap the held grading calls time out and the run fails
            "llm": {"base_url": server.base_url, "api_key": "sk-test-spec-123456", "max_retries": 0, "timeout": 20},
            "grading": {"timeout": 10},
            "speculative_draft": True,
            "evidence": {"verify_answers": False},  # the model's checks, to see when they are sent
        }
        agent = await RagsExpert(settings, retriever=KeywordRetriever(docs=make_docs(DOCS), calls=[])).async_init()
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "h"}}
        )
        final = out["messages"][-1]
        assert final.content == "Castle Varen was built in 1412 [1]."
        kinds = [request_kind(r.body) for r in server.requests]
        assert sorted(kinds) == sorted(["relevance"] * 3 + ["answer", "grounded", "useful"])
        of = {k: [r for r in server.requests if request_kind(r.body) == k] for k in set(kinds)}
        graded = [r.answered_at for r in of["relevance"] if r.answered_at is not None]
        assert len(graded) == 3 and of["answer"][0].at < min(graded)  # the draft went out before any grade came back
        assert min(r.at for r in of["grounded"]) > max(graded)  # the checks waited for the grades


async def test_a_draft_over_more_chunks_than_the_context_holds_is_kept():
    many = make_docs({f"fact{i}": f"Castle Varen fact {i}: built in 1412." for i in range(6)})
    model = ScriptedChatModel(responder=Script(generate=lambda t: "Castle Varen was built in 1412 [1]."))
    settings = {
        "llm": {"max_retries": 0},
        "speculative_draft": True,
        "retrieval": {"top_k": 6},
        "max_context_chunks": 4,
    }
    agent = await RagsExpert(settings, chat_model=model, retriever=KeywordRetriever(docs=many, calls=[])).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "m"}}
    )
    final = out["messages"][-1]
    assert final.response_metadata["outcome"] == "success" and final.response_metadata["llm_calls"] == 6 + 1
