"""The reranking stage in the RAG graph (``rerank.*``): the reranked order reaches grading and the answer, a
reranker fault keeps the retrieval order without failing the run, and the rerankers a host can choose (a LangChain
document compressor passed or named by import path, the model-free evidence reranker)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.documents import make_docs
from helpers.openai_server import OpenAIServer, castle_script
from helpers.rerank_server import RerankServer, Trickle
from helpers.scripts import Script
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever

from rags_expert import RagsExpert
from rags_expert.evidence.rerank import EvidenceReranker, fuse, linked
from rags_expert.rag.retrieve.reranking import RerankStage, build_reranker
from rags_expert.retrieval.rerank.base import RerankError
from rags_expert.retrieval.rerank.compressor import CompressorReranker
from rags_expert.settings import EvidenceSettings, RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

QUESTION = "Who founded the town of Varen?"
DOCS = make_docs(  # the retrieval order: the founder's chunk comes last
    {
        "cheese": "Mura valley cheese is aged for nine months in limestone cellars.",
        "bridge": "The Mura bridge was completed in 1890 and rebuilt in 1951.",
        "castle": "Castle Varen was built in 1412 by Duke Albrecht on the river Mura.",
        "duke": "Duke Albrecht ruled from 1398 to 1431 and founded the town of Varen.",
    }
)


class ListRetriever(BaseRetriever):
    """Returns its chunks in their list order whatever the query (a search that ranks badly), recording top_k."""

    docs: list[Document]
    calls: list[int | None] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, top_k: int | None = None, **kw: Any
    ) -> list[Document]:
        self.calls.append(top_k)
        return self.docs[: top_k or 4]


class WordOverlapCompressor(BaseDocumentCompressor):
    """A LangChain document compressor ranking by the share of the query's words a chunk holds."""

    def compress_documents(self, documents, query, callbacks=None):
        words = set(re.findall(r"\w+", query.lower()))
        return sorted(documents, key=lambda d: -len(words & set(re.findall(r"\w+", d.page_content.lower()))))


class FailingCompressor(BaseDocumentCompressor):
    def compress_documents(self, documents, query, callbacks=None):
        raise RuntimeError("the cross-encoder is out of memory")


def relevant_if_founded(question: str, chunk: str) -> str:
    return "yes" if "founded" in chunk else "no"


async def ask(settings: dict, script: Script, **agent_kw) -> tuple[Any, list[dict], ListRetriever, Script]:
    retriever = ListRetriever(docs=DOCS, calls=[])
    base = {"llm": {"max_retries": 0}, "max_rephrases": 0, "retrieval": {"top_k": 2}}
    model = ScriptedChatModel(responder=script)
    agent = await RagsExpert({**base, **settings}, chat_model=model, retriever=retriever, **agent_kw).async_init()
    events, out = [], None
    async for mode, chunk in agent.get_compiled_graph().astream(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t"}}, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            out = chunk
    assert out is not None
    return out["messages"][-1], events, retriever, script


async def test_the_reranked_order_reaches_grading_and_the_answer():
    graded_chunks: list[str] = []

    def grade(question: str, chunk: str) -> str:
        graded_chunks.append(chunk)
        return relevant_if_founded(question, chunk)

    script = Script(relevance=grade, generate=lambda t: "Duke Albrecht founded it [1].")
    with RerankServer() as server:
        settings = {"rerank": {"kind": "http", "api": "tei", "url": server.url, "candidates": 4}}
        msg, events, retriever, _ = await ask(settings, script)
    assert retriever.calls == [4]  # the candidates, not top_k
    assert sorted(graded_chunks) == sorted([DOCS[3].page_content, DOCS[2].page_content])  # the reranker's best two
    assert msg.response_metadata["outcome"] == "success"
    assert msg.response_metadata["sources"][0]["content"] == DOCS[3].page_content
    assert {"event": "reranked", "reranker": "http:tei", "candidates": 4, "kept": 2} in events


async def test_without_reranking_the_retrieval_order_is_graded():
    graded_chunks: list[str] = []

    def grade(question: str, chunk: str) -> str:
        graded_chunks.append(chunk)
        return relevant_if_founded(question, chunk)

    msg, events, retriever, _ = await ask({}, Script(relevance=grade))
    assert retriever.calls == [2] and sorted(graded_chunks) == sorted(d.page_content for d in DOCS[:2])
    assert msg.response_metadata["reason"] == "no_relevant_documents"
    assert not [e for e in events if e["event"].startswith("rerank")]


async def test_a_reranker_fault_keeps_the_retrieval_order_and_the_run_goes_on():
    graded_chunks: list[str] = []

    def grade(question: str, chunk: str) -> str:
        graded_chunks.append(chunk)
        return "yes"

    with RerankServer() as server:
        server.faults.append((500, b'{"error": "model crashed"}'))
        settings = {"rerank": {"kind": "http", "url": server.url, "candidates": 4, "max_retries": 0}}
        msg, events, _, _ = await ask(settings, Script(relevance=grade))
    assert sorted(graded_chunks) == sorted(d.page_content for d in DOCS[:2])  # retrieval order, cut to top_k
    assert msg.response_metadata["outcome"] == "success"
    [failed] = [e for e in events if e["event"] == "rerank_failed"]
    assert failed["reranker"] == "http:cohere" and "answered HTTP 500" in failed["reason"]


async def test_a_host_compressor_reranks_through_the_graph():
    script = Script(relevance=relevant_if_founded, generate=lambda t: "Duke Albrecht founded it [1].")
    msg, events, retriever, _ = await ask({}, script, reranker=WordOverlapCompressor())
    assert retriever.calls == [20]  # rerank.candidates' default
    assert msg.response_metadata["outcome"] == "success"
    assert msg.response_metadata["sources"][0]["content"] == DOCS[3].page_content
    assert [e["reranker"] for e in events if e["event"] == "reranked"] == ["compressor:WordOverlapCompressor"]


async def test_a_compressor_named_in_the_settings_is_loaded_and_its_fault_is_not_fatal():
    settings = RagsExpertSettings(rerank={"kind": "compressor", "compressor": f"{__name__}:WordOverlapCompressor"})
    reranker = build_reranker(settings)
    assert isinstance(reranker, CompressorReranker)
    assert await reranker.rerank(QUESTION, DOCS, 2) == [DOCS[3], DOCS[2]]
    stage = RerankStage(CompressorReranker(FailingCompressor()), 20, 1.0)
    assert await stage.apply(QUESTION, DOCS, 3) == DOCS[:3]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon", "expected 'module:attribute'"),
        ("rags_expert:NoSuchThing", "cannot be loaded: AttributeError"),
        ("rags_expert.settings:RagsExpertSettings", "not a BaseDocumentCompressor"),
    ],
)
def test_a_bad_compressor_path_is_a_one_line_error(path, message):
    with pytest.raises(RerankError, match=re.escape(message)):
        build_reranker(RagsExpertSettings(rerank={"kind": "compressor", "compressor": path}))


def test_auto_is_the_evidence_reranker_for_the_small_profile_only():
    assert isinstance(build_reranker(RagsExpertSettings(evidence={"profile": "small"})), EvidenceReranker)
    assert build_reranker(RagsExpertSettings()) is None
    assert build_reranker(RagsExpertSettings(evidence={"profile": "small"}, rerank={"kind": "none"})) is None


async def test_the_evidence_reranker_lifts_the_chunk_that_holds_the_question():
    reranker = EvidenceReranker(EvidenceSettings(), weight=2.0, rank_constant=5, link_bonus=0.0)
    assert (await reranker.rerank(QUESTION, DOCS, 2))[0] is DOCS[3]


BRIDGE = make_docs(  # a two-hop question: the second paragraph names none of the question's words
    {
        "Mallrats": "Mallrats is a 1995 comedy film written and directed by Kevin Smith.",
        "Tidewater": "The Tidewater festival is held each summer.",
        "Clerks (film)": "Clerks is a 1994 comedy film.",
        "Harbour": "The harbour was dredged in 1990.",
        "Kevin Smith": "Kevin Patrick Smith was born in Red Bank, New Jersey.",
    }
)


async def test_the_evidence_reranker_follows_the_best_chunks_link_to_the_bridge_document():
    question = "Where was the director of the 1995 comedy film Mallrats born?"
    linked_off = EvidenceReranker(EvidenceSettings(), weight=2.0, rank_constant=5, link_bonus=0.0)
    linked_on = EvidenceReranker(EvidenceSettings(), weight=2.0, rank_constant=5, link_bonus=0.2)
    assert "Kevin Smith" not in [d.metadata["title"] for d in await linked_off.rerank(question, BRIDGE, 2)]
    assert sorted(d.metadata["title"] for d in await linked_on.rerank(question, BRIDGE, 2)) == [
        "Kevin Smith",
        "Mallrats",
    ]


async def test_the_bridge_document_is_lifted_but_never_above_the_chunk_that_names_it():
    """With ``top_k`` 1 the chunk naming the bridge is kept, not the bridge it links to (which a second hop finds)."""
    question = "Where was the director of the 1995 comedy film Mallrats born?"
    big_bonus = 5.0  # more than the fused scores: it would put the bridge first
    reranker = EvidenceReranker(EvidenceSettings(), weight=2.0, rank_constant=5, link_bonus=big_bonus)
    kept = await reranker.rerank(question, BRIDGE, 2)
    assert [d.metadata["title"] for d in kept] == ["Mallrats", "Kevin Smith"]
    assert [d.metadata["title"] for d in await reranker.rerank(question, BRIDGE, 1)] == ["Mallrats"]


def test_a_link_is_a_whole_title_of_another_document_without_its_qualifier():
    docs = make_docs(
        {
            "Clerks review": "Smith shot Clerks in the store where he worked; clerkship is another word.",
            "Clerks (film)": "Clerks is a 1994 film.",
            "Clerk": "A clerk keeps records.",
            "Go": "Go is a game.",
            "Clerks review ": "The same document's title is no link.",
        }
    )
    assert linked(docs, 0) == [False, True, False, False, False]


def test_fusion_keeps_retrieval_rank_for_chunks_the_evidence_cannot_tell_apart():
    assert fuse([0.0, 0.0, 0.9, 0.0], weight=2.0, k=5) == [2, 0, 1, 3]
    assert fuse([0.5, 0.5, 0.5], weight=2.0, k=5) == [0, 1, 2]
    assert fuse([0.1, 0.9], weight=0.0, k=5) == [0, 1]  # weight 0: the retrieval order


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({"RAGS_EXPERT_RERANK__KIND": "http"}, "error: RerankError: rerank.kind=http needs rerank.url"),
        (
            {"RAGS_EXPERT_RERANK__KIND": "compressor", "RAGS_EXPERT_RERANK__COMPRESSOR": "nosuch:thing"},
            "error: RerankError: rerank.compressor='nosuch:thing' cannot be loaded: ModuleNotFoundError: "
            "No module named 'nosuch'",
        ),
    ],
)
def test_a_reranker_setting_that_cannot_work_is_one_line_and_exit_2(tmp_path, env, line):
    model = {"RAGS_EXPERT_LLM__BASE_URL": "http://127.0.0.1:9/v1", "RAGS_EXPERT_LLM__MODEL": "m"}
    done = run_cli(["ask", "When was the castle built?"], cli_env(tmp_path, **model, **env))
    assert (done.returncode, done.stderr.strip()) == (2, line)


# --- a reranker that sends its reply one byte a second ---------------------------------------------


@pytest.mark.slow  # two CLI processes (ingest, ask)
def test_the_cli_answers_and_exits_promptly_past_a_trickling_reranker(tmp_path):
    """``requests``' timeout is per read: a body sent one byte every 0.25 s never times out there. The reply has a
    total deadline (rerank.timeout), the answer keeps the retrieval order, and the process exits at once."""
    data = ingest_docs(
        tmp_path,
        {
            "castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n",
            "cheese.md": "# Cheese\n\nMura valley cheese is aged for nine months.\n",
        },
    )
    with RerankServer() as reranker, OpenAIServer(castle_script) as model:
        reranker.faults.append(Trickle(size=600, interval=0.25))  # 150 s in all
        env = cli_env(
            data,
            RAGS_EXPERT_RERANK__KIND="http",
            RAGS_EXPERT_RERANK__URL=reranker.url,
            RAGS_EXPERT_RERANK__TIMEOUT="1",
            RAGS_EXPERT_RERANK__MAX_RETRIES="0",
        )
        start = time.monotonic()
        done = run_cli(["ask", "When was Castle Varen built?", "--base-url", model.base_url], env, timeout=60)
        took = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Castle Varen was built in 1412 [1].")
    assert "reranker http:cohere failed" in done.stderr and "keeping the retrieval order" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(reranker.requests) == 1
    print(f"ask past a trickling reranker: {took:.1f}s")


@pytest.mark.slow  # about 3 s: four rerank deadlines in a row
def test_trickling_rerank_replies_do_not_wedge_later_questions_nor_asyncio_run():
    """More trickling replies than the loop's default executor has threads, one question after the other; then a
    question with a healthy reranker is reranked promptly, and ``asyncio.run`` returns."""
    executor = ThreadPoolExecutor(max_workers=2)  # the loop's default executor, smaller than the slow replies
    result: dict[str, Any] = {}

    async def host(server: RerankServer) -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        grade = Script(relevance=lambda q, c: "yes")
        settings = {"rerank": {"kind": "http", "url": server.url, "timeout": 0.5, "max_retries": 0}}
        for _ in range(4):
            server.faults.append(Trickle(size=400, interval=0.1))  # 40 s in all
            _, events, _, _ = await ask(settings, grade)
            result.setdefault("failed", []).append([e["event"] for e in events if e["event"].startswith("rerank")])
        start = time.monotonic()
        _, events, _, _ = await ask(settings, grade)
        result["took"] = time.monotonic() - start
        result["healthy"] = [e["event"] for e in events if e["event"].startswith("rerank")]

    with RerankServer() as server:
        runner = threading.Thread(target=asyncio.run, args=(host(server),), daemon=True)
        runner.start()
        runner.join(20)
        executor.shutdown(wait=False)
        assert not runner.is_alive(), f"asyncio.run did not return: {result}"
    assert result["failed"] == [["rerank_failed"]] * 4
    assert result["healthy"] == ["reranked"] and result["took"] < 2.0, result
