"""``ask --local`` on the real instruction models of the benchmarks (Qwen2.5-Coder-1.5B / 0.5B-Instruct, GGUF), as a
user runs it: the profile ``auto`` picks for the file, a right cited answer, an honest "could not find" and no
answer that states nothing. Optional and slow: the models are fetched by ``python bench/models.py`` (about 1.6 GB,
never a dependency); without them each test is skipped with that command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import models  # noqa: E402  (bench/models.py: the fetched GGUFs)

pytestmark = pytest.mark.slow

DOCS = {
    "server.md": "# Server options\n\n"
    "The `--workers` option sets how many worker processes serve requests. It defaults to 4.\n\n"
    "The `--timeout` option is the number of seconds a worker may stay silent before it is restarted. "
    "The default timeout is 30 seconds.\n",
}


def model_or_skip(key: str) -> Path:
    path = models.model_path(key)
    if path is None:
        pytest.skip(models.skip_reason(key))
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return ingest_docs(tmp_path_factory.mktemp("instruct"), DOCS)


def ask(data_dir: Path, model: Path, question: str, *, as_json: bool = True):
    """``ask --local --model-path`` (with ``--json``, the reply; without, the progress lines on stderr)."""
    flags = ["--json"] if as_json else []
    # These tests check what the model answers, not how fast: a slow shared machine gets the time it needs.
    env = cli_env(data_dir, RAGS_EXPERT_LOCAL__REQUEST_TIMEOUT="500", RAGS_EXPERT_LOCAL__GRADING_TIMEOUT="500")
    done = run_cli(["ask", "--local", "--model-path", str(model), *flags, question], env, timeout=900)
    assert "Traceback" not in done.stderr
    return done, (json.loads(done.stdout) if as_json and done.stdout.strip() else {})


def test_the_1_5b_model_gets_the_compact_profile_and_a_cited_answer(data_dir):
    model = model_or_skip("1.5b")
    question = "How long can a worker stay silent before it is restarted by default?"
    # one plain ask (a 1.5B answer is the slowest step of the suite): the progress on stderr, then the answer and
    # its sources on stdout, each source a line "[n] title (path)"
    done, _ = ask(data_dir, model, question, as_json=False)
    assert "profile compact" in done.stderr
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    answer, _, sources = done.stdout.partition("\n[1] ")
    assert "30" in answer
    assert "server.md" in sources  # the knowledge base's one page, short enough to be one chunk: "30 seconds"


def test_the_1_5b_model_is_honest_about_what_the_documents_do_not_say(data_dir):
    model = model_or_skip("1.5b")
    done, reply = ask(data_dir, model, "Which TLS cipher suites does the server enable by default?")
    assert done.returncode == 1, reply.get("answer")


def test_the_0_5b_model_gets_the_profile_its_size_calls_for(data_dir):
    model = model_or_skip("0.5b")
    done, _ = ask(data_dir, model, "How many worker processes are there by default?", as_json=False)
    assert "profile small" in done.stderr
    assert done.returncode in (0, 1), done.stderr
