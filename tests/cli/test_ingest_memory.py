"""``rags-expert ingest`` memory on degenerate big files, as a script sees it (a subprocess): its peak RSS stays
under the bound docs/retrieval.md gives ("Memory"), 400 MB + 8 x the largest file's size, with the wordllama
embeddings of the tests."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.cli_run import ROOT, cli_env

MB = 2**20
BASE_MB, PER_FILE_BYTE = 400, 8
"""The documented bound: peak RSS <= BASE_MB + PER_FILE_BYTE x the largest file's size."""

MEASURE = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "rags_expert.cli", *sys.argv[1:]], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
print(done.stderr + done.stdout, end="")
"""


def peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[int, int, str]:
    """Run ``rags-expert ARGS`` in a process of its own: (exit code, its peak RSS in MB, its output)."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    first, _, output = done.stdout.partition("\n")
    code, mb = map(int, first.split())
    return code, mb, output


@pytest.mark.slow
def test_a_million_heading_lines_and_a_one_line_file_stay_under_the_documented_memory(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "hashes.md").write_text("#\n" * 400_000)  # 400,000 empty headings: once 3 tokens each, all at once
    big = 8 * MB
    (folder / "one-line.md").write_text("x" * big)  # no separator: once split into single characters
    code, mb, output = peak_rss_mb(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert code == 0, output
    warning, summary, *per_format = output.splitlines()
    assert warning == f"WARNING skipping {folder / 'hashes.md'}: no text to index"
    assert summary.startswith("1 files, 8389 chunks (8389 new, ") and "1 skipped" in summary
    assert per_format == ["  Markdown: 1 file, 8389 chunks, 1 skipped (1 with no text to index; reasons above)"]
    assert mb <= BASE_MB + PER_FILE_BYTE * big // MB, f"peak RSS {mb} MB"
