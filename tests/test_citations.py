"""Citations are ``[n]`` markers naming a chunk of the context, in prose only; other brackets stay as written."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.citations import (
    cited_numbers,
    cited_sources,
    iter_citations,
)
from rags_expert.testing import ScriptedChatModel


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Built in 1412 [1].", [1]),
        ("Built [2] by the duke [1, 3].", [2, 1, 3]),
        ("Built [2][3] and [1;2].", [2, 3, 1]),
        ("Built [ 2 ].", [2]),
        ("Use `items[1]` to read it.", []),  # inline code
        ("Use ``a`[1]`` here.", []),  # a double-backtick span holding a backtick
        ("```python\nprint(arr[1])\n[2]\n```\nSee [3].", [3]),  # fenced block
        ("~~~\n[1]\n~~~\n[2]", [2]),
        ("  ```\n  x[1]\n  ```\n- [2]", [2]),  # an indented fence (inside a list)
        ("```\n[1] never closed", []),  # an unclosed fence runs to the end
        ("One ``` tick run is literal [1].", [1]),
        ("row_list[1] and obj.x[2] and f(x)[3] and ns::v[1] and p->a[2] and grid_2d[1][2]", []),  # code subscripts
        ("Built by Mara Quill[1] in 1871[2].", [1, 2]),  # prose that forgot the space still cites
        ("Lighthouses[1][3] are tall.", [1, 3]),
        ("It stands by the sea[2].", [2]),  # a short word in prose, no code on the line
        ("In [2023] the castle fell.", []),  # a year: beyond the context
        ("See [7].", []),  # three chunks: [7] names none
        ("See [1, 9].", []),  # a group is a citation only when every number names a chunk
        ("See [0] and [01].", []),
        ("A [1](https://example.org) link and ![2](img.png).", []),
        ("[2] opens the answer.", [2]),
        ("Built in 1412.[1]", [1]),
    ],
)
def test_what_counts_as_a_citation(text, expected):
    assert cited_numbers(text, 3) == expected


@pytest.mark.parametrize(
    "text",
    [
        "x = arr[0]; y = arr[1]",
        "In [2023] the castle fell, see [7] and [1, 99].",
        "Use `items[1]` and\n```\nfor i in range(3):\n    print(a[i], b [2])\n```",
        "A [1](https://example.org) link, m[1][2], f(x)[3] ;  spacing  kept .",
    ],
)
def test_text_without_citations_is_left_exactly_as_written(text):
    assert cited_sources(text, ["unused"] * 3) == (text, [])  # type: ignore[list-item]


def test_citations_are_renumbered_in_order_of_appearance_and_nothing_else_changes():
    docs = [Document(page_content=f"chunk {i}", metadata={"title": f"t{i}"}) for i in (1, 2, 3)]
    text = "Built [3;1 ] in `a[2]`, see [2023] and [2][3]."
    answer, sources = cited_sources(text, docs)
    # first cited: context 3 → [1], then 1 → [2], then 2 → [3]; one bracket's numbers sorted
    assert answer == "Built [1, 2] in `a[2]`, see [2023] and [3][1]."
    assert [(s["n"], s["title"]) for s in sources] == [(1, "t3"), (2, "t1"), (3, "t2")]
    assert all(s["uid"] == s["chunk_id"] and s["uid"] for s in sources)


def test_citation_spans_point_at_their_markers():
    text = "a [1] `b[2]` c [2, 3]"
    assert [(text[c.start : c.end], c.numbers) for c in iter_citations(text, 3)] == [("[1]", (1,)), ("[2, 3]", (2, 3))]


async def _ask(answer: str, docs, **settings):
    script = Script(relevance=lambda q, c: "yes", generate=lambda t: answer)
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings},
        chat_model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=docs, calls=[]),
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("How do I read the castle list?")]}, {"configurable": {"thread_id": "c"}}
    )
    return out["messages"][-1], script


async def test_code_in_an_answer_is_not_a_citation(castle_docs):
    answer = "Read it with `items[1]`:\n```python\nprint(castles[2])\n```"
    msg, script = await _ask(answer, castle_docs, max_generations=2)
    assert msg.response_metadata["outcome"] == "failure"  # it cites no chunk: rejected, without a grading call
    assert msg.response_metadata["reason"] == "not_grounded"
    assert script.count("generate") == 2 and script.count("grounded") == 0


async def test_an_answer_keeps_its_code_and_cites_only_its_markers(castle_docs):
    answer = "Castle Varen dates from 1412 [1]; in code: `dates[2]`, and [2023] is a year.\n```\nx = arr[0]\n```"
    msg, _ = await _ask(answer, castle_docs)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.content == answer
    assert [s["n"] for s in msg.response_metadata["sources"]] == [1]
