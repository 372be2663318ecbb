"""A question or query given as bytes that are not UTF-8 (a Latin-1 terminal) is read as text, not carried
as undecodable surrogates until something encodes it ("the knowledge base failed (UnicodeEncodeError…)")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs
from helpers.openai_server import OpenAIServer, castle_script, prompt_text

from rags_expert.cli.support import text_arg


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    return ingest_docs(
        tmp_path_factory.mktemp("text_args"),
        {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"},
    )


def run_bytes(args: list[bytes], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``rags-expert ARGS`` with the arguments passed as raw bytes, under a UTF-8 locale."""
    env = {**env, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    command = [sys.executable.encode(), b"-m", b"rags_expert.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, timeout=180, cwd=ROOT)


@pytest.mark.slow
def test_ask_reads_a_latin1_question_as_latin1_text(kb_dir):
    with OpenAIServer(castle_script) as server:
        env = cli_env(kb_dir, RAGS_EXPERT_LLM__BASE_URL=server.base_url)
        done = run_bytes([b"ask", b"When was Castle Varen built, caf\xe9 owner?", b"-q"], env)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, stderr
    assert stdout.startswith("Castle Varen was built in 1412 [1].") and stderr == ""
    assert any("built, café owner?" in prompt_text(r.body) for r in server.requests)


@pytest.mark.slow
def test_search_reads_a_latin1_query(kb_dir):
    done = run_bytes([b"search", b"caf\xe9 Castle Varen"], cli_env(kb_dir))
    assert done.returncode == 0, done.stderr.decode()
    assert "Castle Varen was built in 1412" in done.stdout.decode()


@pytest.mark.parametrize(
    ("raw", "text"),
    [(b"caf\xe9", "café"), ("café".encode(), "café"), (b"plain", "plain"), (b"\xff\xfe", "ÿþ")],
)
def test_text_arg_reads_argv_bytes_as_utf8_else_latin1(raw, text):
    assert text_arg(os.fsdecode(raw)) == text
