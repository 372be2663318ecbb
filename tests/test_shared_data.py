"""A checkout without the shared test data (a fresh clone) passes the suite: its readers skip, saying what is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.shared_data import ENV, ROOT, missing_reason, shared_data

# Every test that reads the shared data (tests/helpers/shared_data.py's files), by file or by node id.
READERS = [
    "tests/kg",
    "tests/test_evaluation.py",
    "tests/local/test_local_model_e2e.py",
    "tests/hosts/test_langgraph_server.py::test_kg_graph_answers_through_the_server",
    "tests/hosts/test_mcp_server.py::test_kg_query_is_served_when_a_kg_is_configured",
]


def _pytest(args: list[str], data: Path) -> subprocess.CompletedProcess[str]:
    """The test suite in a child process, with the shared data looked for in ``data``."""
    env = {**os.environ, ENV: str(data), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_locator_reads_the_variable_and_names_it_when_a_file_is_missing(monkeypatch, tmp_path):
    present = tmp_path / "biochatter" / "kg_schema_data.yaml"
    present.parent.mkdir()
    present.write_text("gene: {}\n")
    assert missing_reason(present, "the schema") is None
    reason = missing_reason(tmp_path / "hotpotqa" / "dev.jsonl", "the HotpotQA dev split")
    assert reason == (
        f"the HotpotQA dev split not found at {tmp_path / 'hotpotqa' / 'dev.jsonl'} "
        f"(the shared test data: set {ENV} to the folder holding biochatter/ and hotpotqa/)"
    )
    monkeypatch.setenv(ENV, str(tmp_path))
    assert shared_data() == tmp_path
    monkeypatch.delenv(ENV)
    assert shared_data() == ROOT.parent / "shared" / "data"


@pytest.mark.slow
def test_without_the_shared_data_every_reader_skips_naming_the_file_and_the_variable(tmp_path):
    nowhere = tmp_path / "no-shared-data"
    run = _pytest(READERS, nowhere)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    skips = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    missing = [line for line in skips if f"not found at {nowhere}" in line]
    assert missing and all(f"set {ENV} to" in line for line in missing)
    for what, path in [
        ("the BioChatter KG schema", nowhere / "biochatter" / "kg_schema_data.yaml"),
        ("the HotpotQA dev split", nowhere / "hotpotqa" / "dev.jsonl"),
    ]:
        assert any(f"{what} not found at {path}" in line for line in missing), (what, skips)
    # nothing else in the whole suite reads the data while it is collected
    collected = _pytest(["tests", "--collect-only"], nowhere)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert " collected" in collected.stdout and "error" not in collected.stdout.splitlines()[-1]
