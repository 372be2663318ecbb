"""Prompt overrides take plain ``{name}`` fields only: anything else is refused at ``async_init`` naming the
key and the field, and a template that cannot be rendered inside a node ends the run in ``finalize_failure``."""

from __future__ import annotations

import json
import os
import re

import pytest
from helpers.cli_run import cli_env, run_cli
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.messages import AIMessage, HumanMessage

from rags_expert import PromptError, PromptStore, RagsExpert, RagsExpertSettings
from rags_expert.llm.grading import GradingContext
from rags_expert.rag.graph import build_graph
from rags_expert.rag.nodes import RagDeps
from rags_expert.testing import ScriptedChatModel

BAD_FIELDS = [
    ("{question.title_case}", "uses attribute access"),
    ("{question[0]}", "uses indexing"),
    ("{question['a']}", "uses indexing"),
    ("{question!r}", r"uses a conversion \(!r\)"),
    ("{question!s:>10}", r"uses a conversion \(!s\)"),
    ("{question:>10}", r"uses a format spec \(:>10\)"),
    ("{question:{context}}", r"uses a format spec \(:\{context\}\)"),
    ("{}", r"is positional \(name the variable\)"),
    ("{0}", r"is positional \(name the variable\)"),
    ("{0.real}", r"is positional \(name the variable\)"),
    ("{-}", "is not a variable name"),
]


def _agent(**settings) -> RagsExpert:
    return RagsExpert(settings, chat_model=ScriptedChatModel(responses=[]), retriever=KeywordRetriever(docs=[]))


@pytest.mark.parametrize(("field", "problem"), BAD_FIELDS)
async def test_async_init_refuses_a_field_that_is_not_a_plain_name(field, problem):
    template = "<chunks>{context}</chunks> Question: {question} " + field
    with pytest.raises(PromptError, match=rf"^prompt 'generate': field {re.escape(field)} {problem}; only plain"):
        await _agent(prompts={"generate": template}).async_init()


async def test_a_prompt_dir_override_is_checked_the_same_way(tmp_path):
    (tmp_path / "grade_useful.txt").write_text("Does {answer} resolve {question.lower}?")
    with pytest.raises(PromptError, match=r"prompt 'grade_useful': field \{question.lower\} uses attribute access"):
        await _agent(prompt_dir=str(tmp_path)).async_init()


async def test_a_prompt_dir_file_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "generate.txt").write_bytes("Réponds à {question} depuis {context}".encode("latin-1"))
    with pytest.raises(PromptError, match=r"prompt file .*generate\.txt is not UTF-8 text \(byte 0xe9 at offset 1\)"):
        await _agent(prompt_dir=str(tmp_path)).async_init()


@pytest.mark.slow
def test_ask_with_a_prompt_file_that_is_not_utf8_is_one_line_naming_the_file(tmp_path):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "rephrase_query.txt").write_bytes(b"Reformule \xab{question}\xbb")
    env = cli_env(
        tmp_path / "data", RAGS_EXPERT_PROMPT_DIR=str(prompts), RAGS_EXPERT_LLM__BASE_URL="http://127.0.0.1:9/v1"
    )
    done = run_cli(["ask", "When was Castle Varen built?"], env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: PromptError: prompt file {prompts / 'rephrase_query.txt'} is not UTF-8 text "
        "(byte 0xab at offset 10); save it as UTF-8"
    ]


async def test_literal_braces_and_plain_fields_are_fine(castle_docs):
    generate = 'Reply as {{"answer": "..."}} from:\n{context}\nQ: {question}'
    script = Script(generate=lambda t: "Built in 1412 [1].")
    agent = await RagsExpert(
        {"prompts": {"generate": generate}, "llm": {"max_retries": 0}},
        chat_model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=castle_docs, calls=[]),
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "b"}}
    )
    assert out["messages"][-1].response_metadata["outcome"] == "success"


@pytest.mark.slow
def test_the_cli_reports_a_bad_override_in_one_line(tmp_path):
    env = {
        **os.environ,
        "RAGS_EXPERT_DATA_DIR": str(tmp_path),
        "RAGS_EXPERT_PROMPTS": json.dumps({"generate": "{context} {question.title_case}"}),
    }
    proc = run_cli(["ask", "When?", "--base-url", "http://127.0.0.1:9/v1"], env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: PromptError: prompt 'generate': field {question.title_case} uses attribute access; "
        "only plain {name} placeholders are allowed (write literal braces as {{ }})"
    ]


# --- a store that was never validated (a host's own graph, a subclass): rendering fails inside a node ----------


def _graph(store: PromptStore, script: Script, docs, **settings):
    """The RAG graph over ``store`` as given (``RagsExpert.async_init`` would have refused it)."""
    s = RagsExpertSettings(llm={"max_retries": 0}, **settings)
    deps = RagDeps(
        model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=docs, calls=[]),
        settings=s,
        grading=GradingContext.from_settings(s, store),
    )
    return build_graph(deps).compile()


async def _ask(graph, question: str = "When was Castle Varen built?") -> AIMessage:
    out = await graph.ainvoke({"messages": [HumanMessage(question)]})
    return out["messages"][-1]


@pytest.mark.parametrize(
    ("key", "template"),
    [
        ("generate", "{context} {question.title_case}"),  # AttributeError from str.format
        ("generate", "{context} {question} {document[0]}"),  # a variable the node does not pass (KeyError)
        ("answer_system", "Today is {date:%Y}"),  # a format spec str.format rejects for a str
        ("grade_document", "{question} {document!z}"),  # an invalid conversion, in a grading call
    ],
)
async def test_a_render_error_ends_in_finalize_failure(castle_docs, key, template):
    script = Script()
    msg = await _ask(_graph(PromptStore({key: template}), script, castle_docs))
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "prompt_error"
    assert meta["error_class"] == "PromptError" and f"prompt {key!r}" in meta["error"]
    assert msg.content.strip() == (
        'I could not answer "When was Castle Varen built?" because the prompt templates '
        "failed (PromptError). Please try again later."
    )
    assert script.count("generate") == 0  # no answer was asked for with a broken prompt


async def test_a_broken_failure_template_still_ends_in_an_honest_failure(castle_docs):
    store = PromptStore({"failure_not_found": "Nothing for {question.upper}."})
    msg = await _ask(_graph(store, Script(relevance=lambda q, c: "no"), castle_docs, max_rephrases=0))
    assert msg.response_metadata["outcome"] == "failure" and msg.response_metadata["reason"] == "prompt_error"
    assert "failure_not_found" in msg.response_metadata["error"]
    assert msg.content.startswith('I could not answer "When was Castle Varen built?" because the prompt templates')


async def test_a_render_error_never_escapes_astream(castle_docs):
    graph = _graph(PromptStore({"generate": "{context} {question[0]}"}), Script(), castle_docs)
    updates = [
        u
        async for u in graph.astream(
            {"messages": [HumanMessage("When was Castle Varen built?")]}, stream_mode="updates"
        )
    ]
    assert "finalize_failure" in updates[-1]
