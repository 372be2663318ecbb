"""Progress lines and events never show the prompts' markup: a small model echoes ``<chunk n="2" ...>`` into its
draft, and the rejection reason quotes the draft."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, castle_script, request_kind
from langchain_core.documents import Document
from langgraph.graph import END, START, StateGraph

from rags_expert.citations import format_context
from rags_expert.events import PROMPT_TAGS, display_text, emit
from rags_expert.hosts.progress import KG_PROGRESS, RAG_PROGRESS
from rags_expert.prompts import packaged_prompt_dir

ECHO = (
    '<chunk n="1" title="Castle Varen > History" source="/docs/castle.md">\nThe moon is made of green cheese.\n</chunk>'
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"no chunk supports: {ECHO}", "no chunk supports: The moon is made of green cheese."),
        (
            'no chunk supports: <chunk n="2" title="Castle" source="/docs/castle.md">',
            "no chunk supports: (prompt markup)",
        ),
        ('cut short <chunk n="2" title="Cas', "cut short"),
        ("&lt;/chunk> echoed from a neutralised chunk <CHUNKS>", "echoed from a neutralised chunk"),
        ("<question>When?</question> <answer>1412</answer><|im_end|>", "When? 1412"),
        ("  many\n\n  lines\tand   spaces ", "many lines and spaces"),
        ("a < b, <div>html</div> and x<y stay", "a < b, <div>html</div> and x<y stay"),
        ("ends with a colon:", "ends with a colon:"),
    ],
)
def test_display_text_removes_prompt_markup(text, shown):
    assert display_text(text) == shown


def test_display_text_cuts_long_text_at_a_word_with_an_ellipsis():
    shown = display_text("word " * 100, limit=50)
    assert len(shown) <= 50 and shown.endswith("word…")
    assert display_text("x" * 300, limit=50) == "x" * 49 + "…"


def test_every_tag_framing_data_in_the_prompts_is_removed():
    closing = {m.lower() for p in packaged_prompt_dir().glob("*.txt") for m in re.findall(r"</(\w+)>", p.read_text())}
    assert closing and closing <= PROMPT_TAGS
    context = format_context(
        [
            Document("Castle Varen was built in 1412.", metadata={"title": 'The "Varen" <castle>', "source": "a.md"}),
            Document("A <chunk> inside a chunk.", metadata={"title": "B", "source": "b.md", "page": 3}),
        ]
    )
    assert display_text(context) == "Castle Varen was built in 1412. A inside a chunk."


def test_progress_lines_show_no_markup():
    rejected = {"name": "grade_generation", "result": [("grounded", False), ("feedback", f"no chunk supports: {ECHO}")]}
    assert RAG_PROGRESS.line(rejected) == "draft rejected: no chunk supports: The moon is made of green cheese."
    rephrased = {"name": "rephrase_query", "result": [("query", "<query>castle\nbuilt</query>")]}
    assert RAG_PROGRESS.line(rephrased) == "new search: castle built"
    failed = {"name": "execute_tool", "result": [("attempts", [{"error": "<result>bad</result> syntax\nmore"}])]}
    assert KG_PROGRESS.line(failed) == "the query failed: bad syntax"
    long = {"name": "grade_generation", "result": [("grounded", False), ("feedback", "x " * 400)]}
    assert len(RAG_PROGRESS.line(long) or "") <= 240


class _State(TypedDict, total=False):
    n: int


async def test_emitted_events_carry_no_markup_in_their_words():
    def node(state: _State) -> dict[str, Any]:
        emit("answer_rejected", generation=1, feedback=f"no chunk supports: {ECHO}")
        emit("draft_discarded", reason="<chunks>cites [3]</chunks>")
        return {}

    graph = StateGraph(_State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    events = [e async for e in graph.compile().astream({}, stream_mode="custom")]
    assert events == [
        {
            "event": "answer_rejected",
            "generation": 1,
            "feedback": "no chunk supports: The moon is made of green cheese.",
        },
        {"event": "draft_discarded", "reason": "cites [3]"},
    ]


@pytest.fixture(scope="module")
def castle_kb(tmp_path_factory) -> Path:
    return ingest_docs(
        tmp_path_factory.mktemp("markup"),
        {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"},
    )


def _echoing_draft(body: dict[str, Any]) -> Any:
    """The draft echoes the context markup and cites nothing: the evidence finds no chunk for it."""
    return ECHO if request_kind(body) == "answer" else castle_script(body)


def _grader_quotes_markup(body: dict[str, Any]) -> Any:
    """A cited draft that the groundedness grader rejects, quoting the context's markup."""
    if request_kind(body) == "grounded":
        return {"grounded": False, "unsupported": f'{ECHO} <chunk n="1" title="Castle Varen">'}
    return castle_script(body)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("script", [_echoing_draft, _grader_quotes_markup], ids=["draft-echo", "grader-quote"])
def test_ask_progress_on_stderr_shows_no_chunk_markup(castle_kb, script):
    with OpenAIServer(script) as server:
        # the grader must see the cited draft (the evidence would accept it: evidence.verify_answers)
        env = cli_env(
            castle_kb, RAGS_EXPERT_LLM__BASE_URL=server.base_url, RAGS_EXPERT_EVIDENCE__VERIFY_ANSWERS="false"
        )
        done = run_cli(["ask", "When was Castle Varen built?"], env)
    assert "Traceback" not in done.stderr, done.stderr
    assert "[draft rejected: " in done.stderr, done.stderr
    assert "<chunk" not in done.stderr and "</chunk>" not in done.stderr and "&lt;" not in done.stderr
    rejected = [line for line in done.stderr.splitlines() if line.startswith("[draft rejected")]
    assert all(len(line) <= 242 for line in rejected)
