"""``ask`` against a model server the user already runs on localhost (docs/local-model.md#a-model-server-you-already-run-ollama-lm-studio-llamacpp):
a scripted 127.0.0.1 server answering like Ollama's OpenAI-compatible API (``/v1/chat/completions``, a ``name:tag``
model, no API key needed)."""

from __future__ import annotations

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, castle_script

pytestmark = pytest.mark.slow


def test_ask_on_an_ollama_style_server_with_no_api_key(tmp_path):
    env = cli_env(ingest_docs(tmp_path, {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412.\n"}))
    with OpenAIServer(castle_script) as server:
        base_url = f"http://127.0.0.1:{server.port}/v1"  # as `ollama serve` listens: http://127.0.0.1:11434/v1
        done = run_cli(
            ["ask", "--base-url", base_url, "--model", "llama3.2:3b", "-q", "When was Castle Varen built?"], env
        )
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Castle Varen was built in 1412 [1].")
    assert requests and {r.path for r in requests} == {"/v1/chat/completions"}
    assert {r.body["model"] for r in requests} == {"llama3.2:3b"}
    assert {r.headers["authorization"] for r in requests} == {"Bearer not-needed"}  # no key of the user's is sent
