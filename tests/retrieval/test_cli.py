"""The ingest and search subcommands, end to end through ``rags_expert.cli.main``."""

from __future__ import annotations

import json

import pytest

from rags_expert.cli import main
from rags_expert.retrieval.qdrant import close_client
from rags_expert.settings import StoreSettings


@pytest.fixture
def env(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("RAGS_EXPERT_DATA_DIR", str(data))
    monkeypatch.setenv("RAGS_EXPERT_EMBEDDINGS__PROVIDER", "wordllama")
    yield data
    for coll in ("kb", "rags_expert"):
        close_client(StoreSettings(data_dir=data, collection=coll))


def test_ingest_then_search_json(env, docs, capsys):
    assert main(["ingest", str(docs), "--collection", "kb", "--tags", "a,b", "-q"]) == 0
    out = capsys.readouterr().out
    assert "3 files" in out and "0 skipped" in out
    assert main(["search", "Eiffel Tower", "-k", "2", "--collection", "kb", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 2 and set(hits[0]) == {"content", "title", "source", "page", "score"}
    assert hits[0]["source"].endswith("paris.txt") and "Eiffel" in hits[0]["content"]


def test_search_plain_output_and_tag_filter(env, docs, capsys):
    main(["ingest", str(docs), "--collection", "kb", "--tags", "x", "-q"])
    capsys.readouterr()
    assert main(["search", "cats sleep", "--collection", "kb"]) == 0
    assert "1. [" in capsys.readouterr().out
    assert main(["search", "cats sleep", "--collection", "kb", "--tags", "nope"]) == 0
    assert capsys.readouterr().out.strip() == "no hits"


def test_errors_exit_nonzero(env, tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "missing"), "-q"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["search", "x", "--collection", "kb"]) == 2
    assert "ingest documents first" in capsys.readouterr().err
