"""``rags-expert ingest`` progress: a tqdm bar on a terminal (files done of the total, chunks, the rate, the time
left), one plain line per 10 % of the files when stderr is a pipe or a log, nothing with ``-q``."""

from __future__ import annotations

import errno
import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from helpers.cli_run import ROOT, cli_env, run_cli

from rags_expert.hosts.progress import BarIngestProgress, PlainIngestProgress, ingest_progress
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings

FILL = re.compile(r"\[keeping the evidence's passage vectors\]\n\[\d+ passage vectors kept in \d+\.\ds\]\n$")
"""What follows the ingest's own progress: the evidence's passage vectors filled (issue 54), two lines."""


def _ingest_part(stderr: str) -> str:
    """``stderr`` without the vector fill's two closing lines, which must be there, after the ingest's progress."""
    assert FILL.search(stderr), stderr
    return FILL.sub("", stderr)


LINE = re.compile(r"ingest: (\d+)% \((\d+)/(\d+) files, (\d+) chunks, \d+\.\d chunks/s(?:, ~\w+ left)?\)")
SUMMARY = re.compile(
    r"12 files, (\d+) chunks \(\1 new, 0 removed, 0 files unchanged, 0 pruned, 0 skipped\) into 'rags_expert' in "
)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """Twelve small Markdown files."""
    folder = tmp_path_factory.mktemp("progress") / "docs"
    folder.mkdir()
    for i in range(1, 13):
        body = " ".join(f"Sentence {j} of document {i} says something about topic {i}." for j in range(12))
        (folder / f"doc{i:02d}.md").write_text(f"# Document {i}\n\n{body}\n")
    return folder


def _under_a_terminal(args: list[str], env: dict[str, str], rows: int, columns: int) -> tuple[int, str, str]:
    """Run ``rags-expert ARGS`` with stderr on a pseudo-terminal of ``rows`` x ``columns``: (exit code, stdout,
    what the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rags_expert.cli", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    received = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError as exc:  # EIO: the child closed the terminal
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        received += data
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(timeout=180), out, received.decode()


@pytest.mark.slow
@pytest.mark.parametrize(("rows", "columns"), [(40, 120), (0, 0)], ids=["sized", "no-size"])
def test_ingest_on_a_terminal_draws_a_bar(tmp_path, docs, rows, columns):
    code, out, terminal = _under_a_terminal(["ingest", str(docs)], cli_env(tmp_path / "data"), rows, columns)
    assert code == 0, terminal
    assert SUMMARY.match(out), out
    last = _ingest_part(terminal.replace("\r\n", "\n")).split("\r")[-1]  # the bar's last drawing and its line end
    assert re.search(r"100%\|█+\| 12/12 files, \d+ chunks, \d+\.\d chunks/s \[", last), terminal
    assert "\r" in terminal and "ingest: 10%" not in terminal  # drawn in place, not logged in lines


@pytest.mark.slow
def test_ingest_quiet_on_a_terminal_draws_nothing(tmp_path, docs):
    code, out, terminal = _under_a_terminal(["ingest", str(docs), "-q"], cli_env(tmp_path / "data"), 40, 120)
    assert code == 0 and SUMMARY.match(out)
    assert terminal == ""


@pytest.mark.slow
def test_ingest_into_a_pipe_prints_a_line_per_ten_percent(tmp_path, docs):
    done = run_cli(["ingest", str(docs)], cli_env(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
    lines = _ingest_part(done.stderr).splitlines()
    assert len(lines) == 10 and all(LINE.fullmatch(line) for line in lines), done.stderr
    steps = [int(LINE.fullmatch(line).group(2)) * 10 // 12 for line in lines]  # type: ignore[union-attr]
    assert steps == list(range(1, 11))  # one line per 10 % step, each step once
    assert all(line.endswith(" left)") for line in lines[:-1])
    assert lines[-1].startswith("ingest: 100% (12/12 files, ") and lines[-1].endswith(" chunks/s)")
    quiet = run_cli(["ingest", str(docs), "-q"], cli_env(tmp_path / "quiet"))
    assert quiet.stderr == ""
    assert SUMMARY.match(done.stdout) and _untimed(done.stdout) == _untimed(quiet.stdout)  # the summary as before


FILE_LINE = re.compile(
    r"ingest: 0% \(0/1 files, (\d+) chunks, \d+\.\d chunks/s; one-line\.md: (\d+)/(\d+) chunks, ~\w+ left\)"
)


@pytest.mark.slow
def test_a_big_file_shows_its_chunks_stored_into_a_pipe(tmp_path):
    """One file of many chunks (a one-line Markdown file): lines of its chunks stored out of its total, at most
    every ingestion.progress_interval seconds (0 here: one per batch of 5), before the line of the files."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one-line.md").write_text(" ".join(f"Sentence {i} says something about topic {i}." for i in range(600)))
    env = cli_env(
        tmp_path / "data", RAGS_EXPERT_INGESTION__UPSERT_BATCH_SIZE="5", RAGS_EXPERT_INGESTION__PROGRESS_INTERVAL="0"
    )
    done = run_cli(["ingest", str(folder)], env)
    assert done.returncode == 0, done.stderr
    total = int(re.match(r"1 files, (\d+) chunks", done.stdout).group(1))  # type: ignore[union-attr]
    *within, last = _ingest_part(done.stderr).splitlines()
    matches = [FILE_LINE.fullmatch(line) for line in within]
    assert total > 10 and all(matches), done.stderr
    assert [int(m.group(2)) for m in matches] == list(range(5, total, 5))  # type: ignore[union-attr]
    assert all(m.group(1) == m.group(2) and int(m.group(3)) == total for m in matches)  # type: ignore[union-attr]
    assert LINE.fullmatch(last) and last.startswith(f"ingest: 100% (1/1 files, {total} chunks, ")
    default = run_cli(
        ["ingest", str(folder)], cli_env(tmp_path / "default", RAGS_EXPERT_INGESTION__UPSERT_BATCH_SIZE="5")
    )
    # a file stored within progress_interval (30 s) needs no line
    assert len(_ingest_part(default.stderr).splitlines()) == 1


def _untimed(summary: str) -> str:
    return re.sub(r"in \d+\.\ds", "in _s", summary)


@pytest.mark.parametrize(("files", "percents"), [(3, [33, 66, 100]), (1, [100]), (0, []), (25, None)])
def test_plain_progress_prints_one_line_per_step_reached(files, percents):
    stream = io.StringIO()
    progress = PlainIngestProgress(stream)
    progress.start(files)
    for _ in range(files):
        progress.chunks(4)
        progress.file_done()
    progress.close()
    shown = [int(LINE.fullmatch(line).group(1)) for line in stream.getvalue().splitlines()]  # type: ignore[union-attr]
    assert shown == (percents if percents is not None else [12, 20, 32, 40, 52, 60, 72, 80, 92, 100])


def test_progress_kind_follows_the_stream_and_quiet():
    assert type(ingest_progress(False, io.StringIO())) is PlainIngestProgress
    assert type(ingest_progress(True, io.StringIO())).__name__ == "IngestCounts"
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        assert type(ingest_progress(False, terminal)) is BarIngestProgress
    os.close(master)


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def start(self, files: int) -> None:
        self.calls.append(("start", files))

    def file_chunks(self, name: str, total: int) -> None:
        self.calls.append((f"file_chunks {name}", total))

    def chunks(self, n: int) -> None:
        self.calls.append(("chunks", n))

    def file_done(self) -> None:
        self.calls.append(("file_done", 0))


def test_ingestor_reports_files_listed_chunks_and_files_done(tmp_path, docs):
    """Skipped files count as done; re-ingested chunks (nothing to embed) count as stored."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("doc01.md", "doc02.md"):
        (folder / name).write_text((docs / name).read_text())
    (folder / "binary.md").write_bytes(b"a\x00b")
    settings = KnowledgeBaseSettings(
        store={"data_dir": tmp_path / "data", "collection": "progress"},
        embeddings={"provider": "wordllama"},
        ingestion={"upsert_batch_size": 1},
    )
    try:
        runs = []
        for _ in range(2):
            recorder = _Recorder()
            report = Ingestor(KnowledgeBase(settings), progress=recorder).run([folder])
            runs.append((recorder.calls, report))
    finally:
        close_client(settings.store)
    for calls, report in runs:
        assert calls[0] == ("start", 3) and calls.count(("file_done", 0)) == 3
        assert sum(n for kind, n in calls if kind == "chunks") == report.chunks_total > 0
        told = [(kind, n) for kind, n in calls if kind.startswith("file_chunks")]
        assert [kind for kind, _ in told] == ["file_chunks doc01.md", "file_chunks doc02.md"]  # not the binary one
        assert sum(n for _, n in told) == report.chunks_total
    first = [n for kind, n in runs[0][0] if kind == "chunks" and n]
    assert set(first) == {1}  # one report per batch of one chunk
