"""Multi-hop retrieval: a follow-up search for the entity a question needs but does not name (the bridge).

After grading, while hops are left (``multihop.max_hops``) and the latest search brought new relevant chunks,
the run goes to ``hop_retrieve``, which plans a follow-up query from the question and the relevant chunks:

* ``standard`` profile: one model call (prompt ``hop_query``, IRCoT-style) proposes the query, or ``none`` when
  the chunks already hold what the question needs;
* ``small`` profile: no model call; the bridge is the names (not code names) of the best matching factual
  sentence that the question lacks (:mod:`rags_expert.rag._shared.bridge`), and the query is those names.

With a query, the node searches (``multihop.top_k`` chunks, the request's filters) and tags the chunks with their
hop (``retrieval_hop``: each cited source says ``hop``); ``grade_documents`` grades them against the question and
the model's query (:func:`grading_question`), or, after an evidence hop, ``hop_retrieve`` keeps those about a
bridge name. In the ``small`` profile, ``answer_hop`` then quotes the hop's
sentence about the bridge with the bridge sentence, citing both chunks; without one, or in the ``standard`` profile,
the answer is written from the relevant chunks of every hop, and the evidence accepts or quotes only a unit of the
latest hop's chunks (:func:`~rags_expert.rag._shared.choice.answer_unit`: the earlier ones were read and held no
answer, which is why the hop was searched). A hop that finds nothing new leaves the answer to the chunks already
found. Every hop is planned at most once (``hops_planned`` < ``max_hops - 1``), costs at most one call and one
graded search, and a failed planning call only skips the hop (logged), so the loop caps and the LLM-call bound hold
(docs/llm-calls.md).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from rags_expert.citations import HOP_KEY, chunk_id, format_context, hop_of
from rags_expert.events import emit
from rags_expert.evidence import EvidenceScorer, terms
from rags_expert.failsafe import fails_as
from rags_expert.llm.parsing import parse_free_text_field
from rags_expert.llm.structured import GradingContext, structured_call
from rags_expert.outcomes import AnswerKind, DraftFate, FailureReason
from rags_expert.rag._shared.bridge import hop_quote, plan_bridge, split_bridge
from rags_expert.rag._shared.context import keep_context
from rags_expert.rag._shared.extractive import two_quotes
from rags_expert.rag.options import ainvoke_retriever
from rags_expert.rag.profiles import ModelProfile
from rags_expert.rag.state import RagState, value
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import RagsExpertSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

NO_HOP = frozenset({"", "none", "null", "n/a", "no"})


class FollowUpQuery(BaseModel):
    """The follow-up search a multi-hop question needs, or "none"."""

    follow_up: str = Field(description='the search query for the missing fact, or "none"')


def wants_hop(state: RagState) -> bool:
    """A hop is left, the latest search brought new relevant chunks, and an answer may still be written."""
    return (
        value(state, "hops_planned") < value(state, "max_hops") - 1
        and value(state, "new_relevant") > 0
        and not value(state, "error")
        and value(state, "generations") < value(state, "max_generations")
    )


def after_hop(state: RagState) -> bool:
    """The latest search was a hop's."""
    hop_round = value(state, "hop_round")
    return hop_round > 0 and hop_round == len(value(state, "queries"))


def grading_question(state: RagState) -> str:
    """What the latest search's chunks are graded against: the question, and after a model's hop its follow-up
    query too (an evidence hop's chunks are graded by ``hop_retrieve`` itself)."""
    question = state["question"]
    if not after_hop(state):
        return question
    return f"{question}\nFollow-up search: {value(state, 'hops')[-1]['query']}"


@dataclass(frozen=True)
class Plan:
    """A follow-up search: its query, and for the evidence's hop the bridge and where it was found."""

    query: str
    bridge: str = ""
    sentence: str = ""
    chunk: str = ""


def _hop_started(state: Mapping[str, Any]) -> dict[str, Any]:
    """What a hop search spends whether it finds anything or fails: its plan, its query (added to ``queries``) and
    the round it was searched in."""
    queries = [*value(state, "queries"), value(state, "hop_plan")["query"]]
    return {"hop_plan": {}, "queries": queries, "hop_round": len(queries)}


@dataclass(frozen=True)
class Hops:
    """The ``hop_retrieve`` and ``answer_hop`` nodes of one agent (immutable, shared by its runs)."""

    model: BaseChatModel
    retriever: BaseRetriever
    grading: GradingContext
    evidence: EvidenceScorer
    settings: RagsExpertSettings
    profile: ModelProfile
    redacted_error: Callable[[BaseException], str]

    def planning(self, grade: Callable[..., Awaitable[dict[str, Any]]]) -> Callable[..., Awaitable[dict[str, Any]]]:
        """``grade_documents`` followed, while a hop is wanted (:func:`wants_hop`), by the planning of the next hop
        (``hop_plan``; its call counted with the grading's): a single-hop question adds no node and, when a sentence
        already answers it, no call."""

        async def grade_documents(state: RagState, config: RunnableConfig) -> dict[str, Any]:
            update = await grade(state, config)
            merged = {**state, **update}
            if update.get("error") or update.get("speculative") == DraftFate.KEPT or not wants_hop(merged):  # type: ignore[arg-type]
                return update
            plan, calls = await self.plan(merged, config)  # type: ignore[arg-type]
            hop = value(state, "hops_planned") + 2
            return update | {
                "hops_planned": hop - 1,
                "hop_plan": {} if plan is None else plan.__dict__,
                "llm_calls": update.get("llm_calls", 0) + calls,
            }

        grade_documents.__doc__ = grade.__doc__
        return grade_documents

    async def plan(self, state: RagState, config: RunnableConfig) -> tuple[Plan | None, int]:
        """The next hop's query (None: no hop) and the model calls it took."""
        if self.profile.multihop == "llm":
            plan, calls = await self._plan_by_llm(state, config)
        else:
            plan, calls = await self._plan_by_evidence(state), 0
        return (None if plan is None or plan.query in value(state, "queries") else plan), calls

    @fails_as(
        FailureReason.RETRIEVAL_ERROR, charge=_hop_started, reset={"documents": []}, log_as="hop retrieval failed"
    )
    async def hop_retrieve(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Search with the planned hop's query (the request's filters) for ``multihop.top_k`` chunks not relevant
        yet, tagged with their hop; those an earlier search found irrelevant to the question are graded again (a
        chunk about the bridge rarely names the question's words). A retriever fault ends the run honestly, like
        ``retrieve``'s."""
        plan = value(state, "hop_plan")
        hop = value(state, "hops_planned") + 1
        options = SearchOptions.of(state["search"])
        limit = self.settings.multihop.top_k or options.limit
        graded = value(state, "graded")
        # twice the chunks, so that the relevant ones found already leave room for new ones
        docs = await ainvoke_retriever(
            self.retriever, plan["query"], config, options.model_copy(update={"top_k": 2 * limit})
        )
        tagged = [
            Document(page_content=d.page_content, metadata={**d.metadata, HOP_KEY: hop}, id=d.id)
            for d in docs
            if not graded.get(chunk_id(d))
        ][:limit]
        again = {chunk_id(d) for d in tagged}  # judged irrelevant to the question: graded again, for the bridge
        emit("hop_searched", hop=hop, query=plan["query"], bridge=plan["bridge"], chunks=len(tagged))
        update: dict[str, Any] = {
            "documents": tagged,
            "graded": {cid: verdict for cid, verdict in graded.items() if cid not in again},
            "hops": [*value(state, "hops"), {"hop": hop, **plan}],
        }
        return update | (self._about_bridge(state, plan["bridge"], tagged, update["graded"]) if plan["bridge"] else {})

    def _about_bridge(
        self, state: RagState, bridge: str, docs: list[Document], graded: dict[str, bool]
    ) -> dict[str, Any]:
        """The evidence's grading of an evidence hop's chunks: relevant when about a bridge name (all its terms in
        the chunk or its title): what the search was for, and a sentence about the bridge rarely repeats the
        question's words."""
        names = [terms(name) for name in split_bridge(bridge)]
        new = []
        for doc in docs:
            held = terms(f"{doc.metadata.get('title') or ''} {doc.page_content}")
            graded[chunk_id(doc)] = verdict = any(name <= held for name in names)
            if verdict:
                new.append(doc)
        relevant = keep_context(value(state, "relevant"), new, self.settings.max_context_chunks)
        return {"graded": graded, "relevant": relevant, "new_relevant": len(new)}

    async def _plan_by_llm(self, state: RagState, config: RunnableConfig) -> tuple[Plan | None, int]:
        """The model's follow-up query (prompt ``hop_query``) and the calls made: none when a sentence of the
        relevant chunks already answers the question (the evidence's :meth:`~EvidenceScorer.best_answer`: a
        single-hop question costs nothing more); no plan for "none", an unreadable reply or a failed call (the hop
        is optional: the run answers from what it has)."""
        if await self.evidence.best_answer(state["question"], value(state, "relevant")) is not None:
            return None, 0
        context = format_context(value(state, "relevant"))
        messages = self.grading.messages("hop_query", trusted=("context",), question=state["question"], context=context)
        try:
            reply = await structured_call(self.model, FollowUpQuery, messages, self.grading, config=config)
        except Exception as exc:  # noqa: BLE001 - LLMCallError, or a model that cannot even be called
            log.warning("the follow-up query call failed, no second search: %s", type(exc).__name__)
            return None, 1
        text = reply.parsed.follow_up if reply.parsed is not None else parse_free_text_field(reply.raw, "follow_up")
        query = " ".join((text or "").split())[:500]
        return (None if query.strip(" .\"'").lower() in NO_HOP else Plan(query)), 1

    async def _plan_by_evidence(self, state: RagState) -> Plan | None:
        """The bridge of the latest hop's relevant chunks (:func:`~rags_expert.rag._shared.bridge.plan_bridge`) and the
        query of the bridge and the question, or None."""
        latest = value(state, "hops_planned") + 1
        docs = [d for d in value(state, "relevant") if hop_of(d) == latest]
        bridge = await plan_bridge(state["question"], docs, self.evidence)
        if bridge is None:
            return None
        return Plan(bridge.query, bridge.query, bridge.sentence, chunk_id(docs[bridge.doc]))

    async def answer_hop(self, state: RagState) -> dict[str, Any]:
        """The ``small`` profile's answer after a hop: the hop's sentence about the bridge, quoted with the bridge
        sentence and citing both chunks (prompt ``hop_answer``); with none, nothing (the run writes an answer)."""
        hop = value(state, "hops")[-1]
        relevant = value(state, "relevant")
        numbers = {chunk_id(d): n for n, d in enumerate(relevant, start=1)}
        found = [d for d in relevant if hop_of(d) == hop["hop"]]
        if not hop.get("bridge") or hop.get("chunk") not in numbers or not found:
            return {}
        match = await hop_quote(state["question"], hop["bridge"], found, self.evidence, hop["sentence"])
        if match is None:
            return {}
        n = numbers[chunk_id(found[match.doc])]
        quote = two_quotes(self.grading.prompts, hop["sentence"], numbers[hop["chunk"]], match.sentence, n)
        emit("answer_extracted", chunk=n, score=round(match.score, 3), hop=hop["hop"])
        return {"answer": quote, "answer_kind": AnswerKind.EXTRACTIVE.value, "failure_reason": ""}
