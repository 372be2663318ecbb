"""``rags-expert kg`` on the embedded FalkorDB with the sample graph and a scripted model."""

from __future__ import annotations

import json

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared, scripted

from rags_expert.cli import build_parser
from rags_expert.cli.kg import run
from rags_expert.settings import KGExpertSettings

pytestmark = [needs_shared, pytest.mark.slow]  # each test starts an embedded FalkorDB process
QUERY = "MATCH (m:ModelSystem)-[:ModelSystemRelevantToOrgan]->(o:Organ) WHERE o.name = 'brain' RETURN m.name"


def test_kg_prints_query_rows_and_steps(capsys, falkordb_reason):
    args = build_parser().parse_args(
        [
            "kg",
            "Which model systems are used in the brain?",
            "--schema",
            str(SCHEMA_FILE),
            "--schema-name",
            "safety_kg",
            "--load-sample",
        ]
    )
    code = run(
        args, chat_model=scripted(["MATCH (m:ModelSystem) WHERE m.name = 'x' RETURN m.name", QUERY], scores=[1, 9])
    )
    out = capsys.readouterr().out
    assert code == 0
    assert f"query: {QUERY}" in out and "brain organoids" in out and "LUHMES cells" in out
    assert "1. MATCH (m:ModelSystem) WHERE m.name = 'x'" in out and "2. " + QUERY in out


def test_kg_json_and_failure_exit_code(capsys, falkordb_reason):
    args = build_parser().parse_args(
        [
            "kg",
            "Which organs?",
            "--schema",
            str(SCHEMA_FILE),
            "--schema-name",
            "safety_kg",
            "--load-sample",
            "--json",
            "--max-steps",
            "2",
        ]
    )
    code = run(
        args, chat_model=scripted(lambda p: "MATCH (x:Nothing) RETURN x", scores=0.0), settings=KGExpertSettings()
    )
    data = json.loads(capsys.readouterr().out.split("\n", 1)[1])  # after the "loaded sample graph" line
    assert code == 1 and data["exit_reason"] == "max_steps" and data["steps"] == 2 and data["rows"] == []


def test_kg_bad_schema_is_exit_code_2(capsys, tmp_path):
    args = build_parser().parse_args(["kg", "q", "--schema", str(tmp_path / "missing.yaml")])
    assert run(args, chat_model=scripted(["MATCH (n) RETURN n"])) == 2
    assert "schema file not found" in capsys.readouterr().err
