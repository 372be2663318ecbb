"""`rags-expert ingest` then `rags-expert ask` on the embedded knowledge base, with a real HTTP model server."""

from __future__ import annotations

import json

import pytest
from helpers.openai_server import OpenAIServer, castle_script, request_kind

from rags_expert.cli import main

pytestmark = pytest.mark.integration


script = castle_script


@pytest.fixture
def kb(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "castle.md").write_text("# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n")
    (docs / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    assert main(["ingest", str(docs), "--tags", "history"]) == 0
    return docs


def test_ask_streams_the_answer_and_prints_sources(kb, capsys):
    with OpenAIServer(script) as server:
        rc = main(["ask", "When was Castle Varen built?", "--base-url", server.base_url, "-q"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("Castle Varen was built in 1412 [1].")
    assert "[1] Castle Varen" in out and "castle.md" in out


def test_ask_json_and_failure_exit_code(kb, capsys):
    with OpenAIServer(
        lambda body: {"relevant": False} if request_kind(body) == "relevance" else script(body)
    ) as server:
        rc = main(["ask", "What is the airspeed of a swallow?", "--base-url", server.base_url, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert payload["outcome"] == "failure" and payload["reason"] == "no_relevant_documents"
    assert "could not find" in payload["answer"]


def test_ask_tag_filter_reaches_the_knowledge_base(kb, capsys):
    with OpenAIServer(script) as server:
        rc = main(["ask", "When was Castle Varen built?", "--base-url", server.base_url, "--tags", "other", "--json"])
        graded = [r for r in server.requests if r.kind == "relevance"]
    payload = json.loads(capsys.readouterr().out)
    assert rc == 1 and payload["outcome"] == "failure"
    assert graded == []  # no chunk carries the tag: nothing retrieved, nothing graded


def test_ask_without_a_model_endpoint_is_a_clear_error(kb, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RAGS_EXPERT_LLM__BASE_URL", raising=False)
    rc = main(["ask", "When was Castle Varen built?"])
    err = capsys.readouterr().err
    assert rc == 2 and "OPENAI_API_KEY" in err and "--local" in err


def test_ask_with_a_fallback_collection_names_the_fallback_source(tmp_path, capsys, monkeypatch):
    docs = tmp_path / "fallback_docs"
    (docs / "primary").mkdir(parents=True)
    (docs / "second").mkdir()
    (docs / "primary" / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    (docs / "second" / "castle.md").write_text("# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n")
    assert main(["ingest", str(docs / "primary"), "--collection", "primary"]) == 0
    assert main(["ingest", str(docs / "second"), "--collection", "second"]) == 0
    monkeypatch.setenv("RAGS_EXPERT_FALLBACK__COLLECTION", "second")
    capsys.readouterr()
    with OpenAIServer(script) as server:
        rc = main(["ask", "When was Castle Varen built?", "--base-url", server.base_url, "--collection", "primary"])
    captured = capsys.readouterr()
    assert rc == 0, captured
    assert captured.out.startswith("Castle Varen was built in 1412 [1].")
    assert "castle.md, fallback source)" in captured.out
    assert "searching the fallback source" in captured.err
