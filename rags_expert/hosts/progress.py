"""What to tell a user while work runs: a graph's progress lines, and an ingestion's progress.

Every host that shows a graph's progress reads it from here: ``rags-expert ask`` prints the lines on stderr, the
Fred v2 agents (:mod:`rags_expert.fred`) send them as status events. The mapping is from node names (the
LangGraph ``tasks`` stream: one event when a node starts, one with its update when it ends) to plain words;
nothing here imports LangGraph, so the CLI stays fast to start.

Text that comes from a model or a chunk (a rejected draft quoted in the feedback, a rephrased query, an
error) is shown through :func:`rags_expert.events.display_text`: the prompts' markup (``<chunk n="2" title=...>``, ``</question>``,
chat-template tokens) removed, whitespace collapsed, cut with an ellipsis. A small model echoes its prompt.

``rags-expert ingest`` shows its progress through :func:`ingest_progress`: a tqdm bar on a terminal, one
plain line per 10 % of the files otherwise (a log keeps no carriage returns or colour codes). Within a big file,
the chunks stored of its total show too: in the bar, and in a line at most every ``ingestion.progress_interval``
seconds otherwise (a 50 MB file took hours with no line at all).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from rags_expert.events import display_text
from rags_expert.rag.names import Node
from rags_expert.retrieval.loaders import shown_path

LINE_LIMIT = 240
"""Characters of a whole progress line."""


RAG_STARTS: dict[str, str] = {
    Node.RETRIEVE: "searching the knowledge base",
    Node.GRADE_DOCUMENTS: "grading the chunks",
    Node.FALLBACK_RETRIEVE: "nothing relevant found: searching the fallback source",
    Node.REPHRASE_QUERY: "rephrasing the search",
    Node.REFINE_KNOWLEDGE: "keeping the relevant parts of the chunks",
    Node.GENERATE: "writing a draft",
    Node.GRADE_GENERATION: "checking the draft",
    Node.EXTRACT_ANSWER: "quoting the best matching sentence of the sources",
    Node.HOP_RETRIEVE: "looking for what the question needs next (multi-hop)",
    Node.ANSWER_HOP: "quoting the follow-up search's answer",
    Node.BUDGET_EXCEEDED: "the question's budget is used up",
}
"""The RAG graph's line when a node starts."""

KG_STARTS = {
    "draft": "writing a Cypher query",
    "execute_tool": "running the query read-only",
    "revise": "scoring the result",
}
"""The KG-query graph's line when a node starts."""


def rag_end_line(node: str, update: Mapping[str, Any]) -> str | None:
    """What to tell the user when a RAG node has ended with ``update`` (None: nothing worth a line)."""
    if node == Node.GRADE_DOCUMENTS and "graded" in update:
        planned = "; a follow-up search is needed" if update.get("hop_plan") else ""
        return f"{update.get('new_relevant', 0)} new relevant chunk(s){planned}"
    if node == Node.REFINE_KNOWLEDGE and "strips" in update:
        return f"{len(update['strips'])} chunk(s) cut to their relevant parts"
    if node == Node.HOP_RETRIEVE and update.get("hops"):
        hop = update["hops"][-1]
        bridge = f" (bridge: {display_text(hop['bridge'])})" if hop.get("bridge") else ""
        return f"hop {hop['hop']}{bridge}: {len(update.get('documents', []))} chunk(s) for {display_text(hop['query'])}"
    if node == Node.REPHRASE_QUERY and update.get("query"):
        return f"new search: {display_text(update['query'])}"
    if node == Node.GRADE_GENERATION and "grounded" in update:
        feedback = update.get("feedback")
        return f"draft rejected: {display_text(feedback)}" if feedback else "draft accepted"
    return None


def kg_end_line(node: str, update: Mapping[str, Any]) -> str | None:
    """What to tell the user when a KG-query node has ended: the last attempt's rows or error."""
    if node != "execute_tool" or not update.get("attempts"):
        return None
    attempt = update["attempts"][-1]
    if attempt.get("error"):
        return f"the query failed: {display_text(str(attempt['error']).splitlines()[0], 160)}"
    return f"{len(attempt.get('rows') or [])} row(s)"


@dataclass(frozen=True)
class Progress:
    """One graph's progress words: the line per starting node, and the function for ended nodes."""

    starts: Mapping[str, str]
    end_line: Callable[[str, Mapping[str, Any]], str | None]

    def line(self, event: Mapping[str, Any]) -> str | None:
        """The line for one ``tasks`` stream event (a node starting, or ending with ``result``), markup-free."""
        node = event.get("name", "")
        if "result" not in event:
            line = self.starts.get(node)
        else:
            line = self.end_line(node, dict(event.get("result") or []))
        return display_text(line, LINE_LIMIT) if line else None


RAG_PROGRESS = Progress(RAG_STARTS, rag_end_line)
KG_PROGRESS = Progress(KG_STARTS, kg_end_line)


# --- ingestion ------------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    """``9s``, ``2m05s`` or ``1h02m`` (rounded up)."""
    s = max(1, math.ceil(seconds))  # never "0s left" while something is left
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class IngestCounts:
    """Files and chunks done so far, and the rates and time left that follow (the clock starts at ``start``).

    It shows nothing itself (``--quiet``); its subclasses show it.
    """

    def __init__(self) -> None:
        self.files = self.total = self.chunks_done = 0
        self.started = self.file_started = time.monotonic()
        self.file_name, self.file_total, self.file_stored = "", 0, 0
        """The file being stored: its name (control characters escaped), its chunks, those stored so far."""

    def start(self, files: int) -> None:
        """The files are listed: ``files`` of them; the clock starts."""
        self.total, self.started = files, time.monotonic()

    def file_chunks(self, name: str, total: int) -> None:
        """The file ``name`` has ``total`` chunks to store."""
        self.file_name, self.file_total, self.file_stored = shown_path(name), total, 0
        self.file_started = time.monotonic()

    def chunks(self, n: int) -> None:
        """``n`` more chunks stored."""
        self.chunks_done += n
        self.file_stored += n

    def file_done(self) -> None:
        """One more file done."""
        self.files += 1
        self.file_total = 0

    @property
    def storing(self) -> bool:
        """Whether a file has chunks stored and some still to store."""
        return 0 < self.file_stored < self.file_total

    def close(self) -> None:
        """Nothing to close."""

    @property
    def elapsed(self) -> float:
        """Seconds since the files were listed."""
        return time.monotonic() - self.started

    def chunk_rate(self) -> str:
        """``12.3 chunks/s``."""
        return f"{self.chunks_done / max(self.elapsed, 1e-9):.1f} chunks/s"

    def line(self) -> str:
        """``ingest: 40% (8/20 files, 153 chunks, 12.3 chunks/s, ~9s left)``; no time left at 100 % (the summary
        that follows says how long the whole run took)."""
        left = self.total - self.files
        timing = f", ~{_duration(self.elapsed / self.files * left)} left" if left and self.files else ""
        percent = 100 * self.files // max(self.total, 1)
        return (
            f"ingest: {percent}% ({self.files}/{self.total} files, {self.chunks_done} chunks, "
            f"{self.chunk_rate()}{timing})"
        )

    def file_part(self) -> str:
        """``big.md: 640/41000 chunks, ~3h08m left`` (the file being stored)."""
        seconds = (time.monotonic() - self.file_started) / self.file_stored * (self.file_total - self.file_stored)
        return f"{self.file_name}: {self.file_stored}/{self.file_total} chunks, ~{_duration(seconds)} left"

    def file_line(self) -> str:
        """``ingest: 0% (0/1 files, 640 chunks, 3.6 chunks/s; big.md: 640/41000 chunks, ~3h08m left)``."""
        percent = 100 * self.files // max(self.total, 1)
        return display_text(
            f"ingest: {percent}% ({self.files}/{self.total} files, {self.chunks_done} chunks, "
            f"{self.chunk_rate()}; {self.file_part()})",
            LINE_LIMIT,
        )


class PlainIngestProgress(IngestCounts):
    """One line per 10 % step of the files reached, for a log: no carriage returns, no colour codes; and while a
    file's chunks are stored, a line about them when ``interval`` seconds have passed since the last line."""

    def __init__(self, stream: IO[str], interval: float = 30.0) -> None:
        super().__init__()
        self.stream, self.step, self.interval = stream, 0, interval
        self.printed = time.monotonic()

    def start(self, files: int) -> None:
        """The files are listed; the interval counts from now."""
        super().start(files)
        self.printed = self.started

    def chunks(self, n: int) -> None:
        """Count the chunks; print a line about the file's chunks when the interval has passed."""
        super().chunks(n)
        if n and self.storing and time.monotonic() - self.printed >= self.interval:
            self._print(self.file_line())

    def file_done(self) -> None:
        """Count the file; print a line when it reaches a new 10 % step."""
        super().file_done()
        step = 10 * self.files // max(self.total, 1)
        if step > self.step:
            self.step = step
            self._print(self.line())

    def _print(self, line: str) -> None:
        """Write one line and note when."""
        print(line, file=self.stream, flush=True)
        self.printed = time.monotonic()


class BarIngestProgress(IngestCounts):
    """A tqdm bar on a terminal: files done out of the total, chunks so far, the chunk rate, the time left.

    While it shows, log records (a skipped file's warning) are written above the bar, not through it.
    """

    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} files{postfix} [{elapsed}<{remaining}]"
    REFRESH = 0.2
    """Seconds between redraws for chunks stored within a file."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream, self.drawn = stream, 0.0
        self.bar: Any = None  # a tqdm bar, once the files are listed
        self.handlers: list[tuple[Any, Any]] = []  # (log handler, its own stream)

    def start(self, files: int) -> None:
        """Open the bar over ``files`` files; send the console log handlers' lines through it."""
        from tqdm import tqdm

        super().start(files)
        # a terminal that says no size (0x0: tqdm would then draw nothing) gets a bar 100 columns wide
        sized = _columns(self.stream) > 0
        bar = tqdm(
            total=files,
            desc="ingest",
            file=self.stream,
            bar_format=self.FORMAT,
            dynamic_ncols=sized,
            ncols=None if sized else 100,
            nrows=None if sized else 20,
            postfix=self._postfix(),
        )
        self.bar = bar
        self._redirect_logging()

    def _postfix(self) -> str:
        """``153 chunks, 12.3 chunks/s``, and ``; big.md: 640/41000 chunks, ~3h08m left`` while a file is stored."""
        return f"{self.chunks_done} chunks, {self.chunk_rate()}" + (f"; {self.file_part()}" if self.storing else "")

    def chunks(self, n: int) -> None:
        """Count the chunks; redraw at most every :attr:`REFRESH` seconds."""
        super().chunks(n)
        if self.bar is not None and time.monotonic() - self.drawn >= self.REFRESH:
            self.bar.set_postfix_str(self._postfix())  # redraws
            self.drawn = time.monotonic()

    def file_done(self) -> None:
        """Count the file and move the bar."""
        super().file_done()
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.update(1)

    def _redirect_logging(self) -> None:
        """Point the root logger's handlers that write to this stream at ``tqdm.write`` (filters kept)."""
        import logging

        writer = _BarWriter(self.stream)
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is self.stream:
                self.handlers.append((handler, handler.setStream(writer)))

    def close(self) -> None:
        """Draw the bar's last state, close it and give the log handlers their stream back."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.close()
        for handler, stream in self.handlers:
            handler.setStream(stream)
        self.handlers.clear()


def _columns(stream: IO[str]) -> int:
    """The width of the terminal ``stream`` writes to (0 when it does not say)."""
    import os

    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class _BarWriter:
    """A stream that writes whole lines above a tqdm bar (for a log handler)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text``'s lines with ``tqdm.write`` (the bar is redrawn below them)."""
        from tqdm import tqdm

        if text.strip():
            tqdm.write(text.rstrip("\n"), file=self.stream)
        return len(text)

    def flush(self) -> None:
        """Flush the underlying stream."""
        self.stream.flush()


def ingest_progress(quiet: bool, stream: IO[str] | None = None, interval: float = 30.0) -> IngestCounts:
    """How ``ingest`` shows progress on ``stream`` (stderr): nothing when quiet, a bar on a terminal, else lines
    (a big file's chunks at most every ``interval`` seconds: ``ingestion.progress_interval``)."""
    stream = stream or sys.stderr
    if quiet:
        return IngestCounts()
    isatty = getattr(stream, "isatty", None)
    return BarIngestProgress(stream) if isatty is not None and isatty() else PlainIngestProgress(stream, interval)


# --- evaluation -----------------------------------------------------------------------------------


class EvalProgress:
    """``rags-expert eval``'s progress on ``stream``: a tqdm bar on a terminal (questions done, the verdicts so far,
    the time left), else one line per question (``eval 3/10: right 1.2s When was ...?``); nothing when quiet."""

    def __init__(self, total: int, stream: IO[str] | None = None, quiet: bool = False) -> None:
        self.total, self.done, self.quiet = total, 0, quiet
        self.stream = stream or sys.stderr
        self.counts: dict[str, int] = {}
        self.bar: Any = None
        isatty = getattr(self.stream, "isatty", None)
        if not quiet and isatty is not None and isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="eval", unit="q", file=self.stream, dynamic_ncols=True)

    def result(self, verdict: str, seconds: float, question: str) -> None:
        """One more question scored."""
        self.done += 1
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in self.counts.items()), refresh=False)
            self.bar.update(1)
            return
        line = f"eval {self.done}/{self.total}: {verdict} {seconds:.1f}s {question}"
        print(display_text(line, LINE_LIMIT), file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar (its last state stays on the terminal)."""
        if self.bar is not None:
            self.bar.close()
