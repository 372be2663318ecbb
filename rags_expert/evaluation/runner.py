"""Asking a question set through the agent, each question in a fresh thread, and scoring the replies.

The one implementation behind ``rags-expert eval QUESTIONS`` and the benchmarks on real documents
(``bench/real_docs.py``, ``bench/single_fact.py``): the agent's compiled graph, as ``ask`` runs it; the reply's
exit code as ``ask`` gives it; the verdict from :func:`rags_expert.evaluation.scoring.score`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rags_expert.evaluation.questions import Question
from rags_expert.evaluation.scoring import JudgeFn, Reply, Result, score
from rags_expert.secrets import redact
from rags_expert.settings import RagsExpertSettings


async def ask_one(graph: Any, question: str, thread: str) -> Reply:
    """The agent's reply to ``question`` in thread ``thread``; a crash is a reply with exit code 2."""
    began = time.monotonic()
    try:
        state = await graph.ainvoke({"messages": [("user", question)]}, {"configurable": {"thread_id": thread}})
    except Exception as exc:  # noqa: BLE001 - one failing question must not end the evaluation
        return Reply(2, seconds=time.monotonic() - began, error=redact(f"{type(exc).__name__}: {exc}")[:500])
    final = state["messages"][-1]
    return Reply.from_message(final.content, final.response_metadata, time.monotonic() - began)


async def ask_questions(
    settings: RagsExpertSettings,
    questions: list[Question],
    *,
    judge: JudgeFn | None = None,
    on_result: Callable[[Result], None] | None = None,
    thread_prefix: str = "eval",
    stopped: Callable[[], bool] = lambda: False,
) -> list[Result]:
    """Every question through one :class:`~rags_expert.rag.RagsExpert` built from ``settings``, scored; once
    ``stopped()`` is true (Ctrl-C), no question more is asked and the one in flight is not kept."""
    from rags_expert.rag import RagsExpert

    agent = await RagsExpert(settings).async_init()
    results: list[Result] = []
    try:
        graph = agent.get_compiled_graph()
        for i, q in enumerate(questions):
            if stopped():
                break
            reply = await ask_one(graph, q.question, f"{thread_prefix}-{i}")
            if stopped():  # its answer is whatever the interruption left of it
                break
            results.append(await score(q, reply, judge))
            if on_result is not None:
                on_result(results[-1])
    finally:
        await agent.aclose()
    return results
