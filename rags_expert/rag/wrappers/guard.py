"""Where the RAG graph asks the host's authorizer (:mod:`rags_expert.rag.authorization`), as node wrappers.

* :func:`guard_documents` (``retrieve``, ``fallback_retrieve``): every retrieved chunk, before the state
  update leaves the node, so grading, the speculative draft, state streams and checkpoints never see a
  denied chunk;
* :func:`guard_relevant` (``grade_documents``): the chunks found relevant, again when grading ends, before a
  next hop is planned from them;
* :func:`guard_context` (``generate``): the relevant chunks again, just before the answer call whose tokens
  stream to the host; revoked ones are dropped, and with none left the run declines (``not_authorized``);
* :func:`guard_answer` (``finalize_success``): every cited chunk just before the answer is given; a revoked
  one withholds the answer: the run declines like a not-found answer (reason ``not_authorized``), offering
  no partial answer;
* :func:`guard_partial` (``finalize_failure``): the chunks a partial answer offered on failure cites;
* :func:`permitted_history` (``prepare``): assistant turns whose sources were revoked are dropped from the
  history before a follow-up is condensed against it; lessons are filtered in
  :func:`rags_expert.lessons.recall_lessons` by the uids recorded with them.

A fault of the hook fails closed: ``authorization_error`` (the honest "the permission check failed" answer)
where chunks were to be used, nothing offered where they were only to be shown. Events name counts, never
uids or texts of denied chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig

from rags_expert.citations import chunk_id, cited_numbers
from rags_expert.events import emit
from rags_expert.failsafe import failure
from rags_expert.outcomes import DraftFate, FailureReason
from rags_expert.rag.authorization import AuthorizationError, Authorizer
from rags_expert.rag.state import RagState, value

NodeFn = Callable[..., Awaitable[dict[str, Any]]]


def _fault(exc: AuthorizationError) -> dict[str, Any]:
    return failure(f"AuthorizationError: {exc}", FailureReason.AUTHORIZATION_ERROR)


async def permitted_docs(authorizer: Authorizer, user: str | None, docs: Sequence[Document]) -> list[Document]:
    """``docs`` less those ``user`` may not read (emits ``chunks_denied`` with their count); raises
    AuthorizationError."""
    allowed = await authorizer.allowed(user, [chunk_id(d) for d in docs])
    kept = [d for d in docs if chunk_id(d) in allowed]
    if len(kept) < len(docs):
        emit("chunks_denied", chunks=len(docs) - len(kept))
    return kept


def guard_documents(node: NodeFn, authorizer: Authorizer | None) -> NodeFn:
    """A retrieval node whose ``documents`` are only those the request's user may read."""
    if authorizer is None:
        return node

    @functools.wraps(node)
    async def run(state: RagState, config: RunnableConfig) -> dict[str, Any]:
        update = await node(state, config)
        if update.get("error") or not update.get("documents"):
            return update
        try:
            kept = await permitted_docs(authorizer, value(state, "user"), update["documents"])
        except AuthorizationError as exc:
            return update | {"documents": [], "relevant": value(state, "relevant")} | _fault(exc)
        update = update | {"documents": kept}
        if "relevant" in update:  # a node that graded its own chunks (an evidence hop): only readable ones stay
            fetched = {chunk_id(d) for d in kept}
            earlier = {chunk_id(d) for d in value(state, "relevant")}  # checked when they were retrieved
            relevant = [d for d in update["relevant"] if chunk_id(d) in fetched | earlier]
            update |= {"relevant": relevant, "new_relevant": sum(chunk_id(d) in fetched for d in relevant)}
        return update

    return run


def guard_relevant(node: NodeFn, authorizer: Authorizer | None) -> NodeFn:
    """A grading node whose ``relevant`` chunks are only those still readable when grading ends (a chunk may be
    revoked while it is graded), before anything plans a next search from them (:mod:`rags_expert.rag.retrieve.hops`)."""
    if authorizer is None:
        return node

    @functools.wraps(node)
    async def run(state: RagState, config: RunnableConfig) -> dict[str, Any]:
        update = await node(state, config)
        if update.get("error") or not update.get("relevant"):
            return update
        try:
            kept = await permitted_docs(authorizer, value(state, "user"), update["relevant"])
        except AuthorizationError as exc:
            return update | {"relevant": []} | _fault(exc)
        dropped = len(update["relevant"]) - len(kept)
        update = update | {"relevant": kept, "new_relevant": max(0, value(update, "new_relevant") - dropped)}
        if dropped and update.get("speculative") == DraftFate.KEPT:  # numbered over a chunk now revoked: write anew
            emit("draft_discarded", reason="a chunk it used is no longer readable")
            update |= {
                "speculative": DraftFate.DISCARDED.value,
                "answer": "",
                "generations": value(state, "generations"),
            }
        return update

    return run


def guard_context(node: NodeFn, authorizer: Authorizer | None) -> NodeFn:
    """``generate`` over only the relevant chunks still readable; with none left, the run declines."""
    if authorizer is None:
        return node

    @functools.wraps(node)
    async def run(state: RagState, config: RunnableConfig) -> dict[str, Any]:
        relevant = value(state, "relevant")
        try:
            kept = await permitted_docs(authorizer, value(state, "user"), relevant)
        except AuthorizationError as exc:
            return _fault(exc)
        if len(kept) == len(relevant):
            return await node(state, config)
        if not kept:
            return {"relevant": []} | failure(
                "NotAuthorized: no chunk to answer from is readable", FailureReason.NOT_AUTHORIZED
            )
        return {"relevant": kept} | await node({**state, "relevant": kept}, config)

    return run


def guard_answer(success: NodeFn, failure_node: NodeFn, authorizer: Authorizer | None) -> NodeFn:
    """``finalize_success`` when every cited chunk (every relevant one, for an answer citing none) is still
    readable; else ``failure_node`` declining (``not_authorized``, or ``authorization_error`` on a fault)."""
    if authorizer is None:
        return success

    @functools.wraps(success)
    async def run(state: RagState) -> dict[str, Any]:
        relevant = value(state, "relevant")
        cited = [relevant[n - 1] for n in cited_numbers(value(state, "answer"), len(relevant))] or relevant
        withheld = {"partial_answer": "", "partial_sources": []}
        try:
            kept = await permitted_docs(authorizer, value(state, "user"), cited)
        except AuthorizationError as exc:
            return await failure_node({**state, **withheld, **_fault(exc)})
        if len(kept) == len(cited):
            return await success(state)
        emit("answer_withheld", reason="a cited chunk is no longer readable")
        return await failure_node(
            {**state, **withheld, "error": "", "failure_reason": FailureReason.NOT_AUTHORIZED.value}
        )

    return run


def guard_partial(node: NodeFn, authorizer: Authorizer | None) -> NodeFn:
    """``finalize_failure`` offering a partial answer (or the closest passages) only when every chunk it cites is
    still readable."""
    if authorizer is None:
        return node

    @functools.wraps(node)
    async def run(state: RagState) -> dict[str, Any]:
        uids = [str(s.get("uid")) for s in value(state, "partial_sources")]
        if value(state, "partial_answer") and await authorizer.revoked(value(state, "user"), uids):
            state = {**state, "partial_answer": "", "partial_sources": []}
        relevant = value(state, "relevant")
        closest = [chunk_id(relevant[c["n"] - 1]) for c in value(state, "closest") if 0 < c["n"] <= len(relevant)]
        if closest and await authorizer.revoked(value(state, "user"), closest):
            state = {**state, "closest": []}
        return await node(state)

    return run


def _source_uids(message: AnyMessage) -> list[str] | None:
    """The uids an assistant turn cited ([] for a user turn); None when it does not say (no ``sources``)."""
    if not isinstance(message, AIMessage):
        return []
    sources = (message.response_metadata or {}).get("sources")
    if not isinstance(sources, list):
        return None
    return [str(s.get("uid")) for s in sources if isinstance(s, dict)]


async def permitted_history(
    authorizer: Authorizer | None, user: str | None, history: list[AnyMessage]
) -> list[AnyMessage]:
    """``history`` less the assistant turns citing a chunk ``user`` may no longer read, and those whose sources
    are unknown (no ``sources`` metadata: fail closed), in one hook call; raises AuthorizationError."""
    if authorizer is None:
        return history
    cited = [_source_uids(message) for message in history]
    uids = [uid for each in cited for uid in each or ()]
    allowed = await authorizer.allowed(user, uids) if uids else set()
    return [m for m, each in zip(history, cited, strict=True) if each is not None and set(each) <= allowed]
