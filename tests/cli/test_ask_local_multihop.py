"""A question that needs two documents, through ``rags-expert ingest`` and ``rags-expert ask --local`` as a user runs
them (subprocesses, the bundled SmolLM2-135M on llama.cpp, the default embedding model, the ``small`` profile): the
evidence finds the bridge in the first document, searches again for it, and quotes both documents with a citation
of each (rags_expert.rag.retrieve.hops)."""

from __future__ import annotations

import pytest
from helpers.cli_run import default_model_env, run_cli

from rags_expert.local.server import local_extra_installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not local_extra_installed(), reason="the 'local' extra or the model is not installed"),
]

DOCS = {
    "zorvan.md": "# Zorvan\n\nZorvan is a 1987 adventure film. The director of Zorvan was Mara Quill.\n",
    "quill.md": "# Mara Quill\n\nMara Quill was born in Lowfield.\n",
    "pepper.md": "# Saffron pepper\n\nThe saffron pepper is grown mainly in the Calder Valley.\n",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return default_model_env(tmp_path_factory.mktemp("ask-local-hops"), DOCS)


def test_a_two_document_question_is_answered_with_both_citations(env):
    done = run_cli(["ask", "--local", "Where was the director of Zorvan born?"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    answer, _, sources = done.stdout.partition("\n[1] ")
    assert "Lowfield" in answer and "[1]" in answer and "[2]" in answer, done.stdout
    assert "zorvan.md" in sources and "quill.md" in sources
    assert "[hop 2 (bridge: Mara Quill): " in done.stderr
    assert "Traceback" not in done.stderr


def test_one_search_cannot_answer_it(env):
    done = run_cli(
        ["ask", "--local", "Where was the director of Zorvan born?"], {**env, "RAGS_EXPERT_MULTIHOP__MAX_HOPS": "1"}
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("I could not find an answer"), done.stdout
