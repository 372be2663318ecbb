"""Wall and CPU seconds of a question, per graph node: ``response_metadata["timings"]``.

* :func:`timed` wraps a node function (beside :func:`rags_expert.llm.usage.metered`): it reads the wall clock
  (``time.perf_counter``) and the process's CPU clock (``time.process_time``: every thread, so the work a
  node hands to worker threads, embedding or a local Qdrant, counts) before and after the node, and adds
  ``{"timings": {node: {runs, wall_s, cpu_s}}}`` to its state update, which :func:`add_timings` sums per node.
  A node that starts a new question (``prepare``: an ``Overwrite`` of ``llm_calls``) starts a new record.
* The lesson recall runs beside the nodes (:mod:`rags_expert.rag.retrieve._recall`): its entry, ``lesson_recall``,
  carries its own wall time, the CPU time of the worker thread that ran it, whether it was ``skipped`` (the
  scope holds no lesson: nothing embedded) and ``waited_s``, how long the node that needed the lessons waited
  for them (0 when the recall was done first: it did not delay the question).
* :func:`summary` is what the final message reports: totals over the graph nodes and ``by_node``; the recall,
  which overlaps them, is reported apart and left out of the totals.

The CPU figures are the process's: exact when a process serves one question at a time; questions served
concurrently in one process overlap each other's figures, as they overlap each other's wall time. The
finalize node that writes the message is not in it (its own time is spent writing it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from langgraph.types import Overwrite

RECALL = "lesson_recall"
"""The entry of the lesson recall (not a graph node: it runs beside them)."""

DIGITS = 6

N = TypeVar("N", bound=Callable[..., Awaitable[Any]])


def timed(name: str, node: N) -> N:
    """``node`` with its wall and CPU seconds added to its update under ``timings[name]`` (the signature is
    kept, so LangGraph still passes ``config`` / ``runtime`` by parameter name)."""

    @functools.wraps(node)
    async def run(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        update = await node(*args, **kwargs)
        if not isinstance(update, dict):
            return update
        entry = {"runs": 1, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        timings = dict(update.get("timings") or {}) | {name: entry}
        if isinstance(update.get("llm_calls"), Overwrite):  # a new question: its record restarts here
            return update | {"timings": Overwrite(add_timings(None, timings))}
        return update | {"timings": timings}

    return run  # type: ignore[return-value]


def add_timings(total: dict[str, dict[str, Any]] | None, update: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Reducer of the state's ``timings``: add a node's seconds (and runs) to its entry; other fields (the
    recall's ``skipped``) are replaced."""
    out = {k: dict(v) for k, v in (total or {}).items()}
    for node, figures in (update or {}).items():
        entry = out.setdefault(node, {})
        for key, figure in figures.items():
            if isinstance(figure, (int, float)) and not isinstance(figure, bool):
                entry[key] = entry.get(key, 0) + figure
            else:
                entry[key] = figure
    return out


def recall_entry(wall_s: float, cpu_s: float, waited_s: float, skipped: bool) -> dict[str, dict[str, Any]]:
    """The ``timings`` update of one lesson recall."""
    return {RECALL: {"runs": 1, "wall_s": wall_s, "cpu_s": cpu_s, "waited_s": waited_s, "skipped": skipped}}


def _rounded(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: round(v, DIGITS) if isinstance(v, float) else v for k, v in entry.items()}


def summary(by_node: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """``response_metadata["timings"]``: ``wall_s`` and ``cpu_s`` summed over the graph nodes, ``by_node``
    (runs, wall_s, cpu_s of each node that ran) and, when the question recalled lessons, ``lesson_recall``."""
    entries = dict(by_node or {})
    recall = entries.pop(RECALL, None)
    out: dict[str, Any] = {
        "wall_s": round(sum(float(e.get("wall_s", 0.0)) for e in entries.values()), DIGITS),
        "cpu_s": round(sum(float(e.get("cpu_s", 0.0)) for e in entries.values()), DIGITS),
        "by_node": {node: _rounded(e) for node, e in entries.items()},
    }
    if recall is not None:
        out[RECALL] = _rounded(recall)
    return out


__all__ = ["RECALL", "add_timings", "recall_entry", "summary", "timed"]
