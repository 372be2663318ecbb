"""``rags_expert.cli`` is a thin dispatcher: explicit registrations, no optional extra imported to build it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rags_expert.cli import COMMANDS, build_parser

OPTIONAL_EXTRAS = (
    "falkordb",
    "neo4j",
    "llama_cpp",
    "matplotlib",
    "fastembed",
    "langgraph_cli",
    "mcp",
    "uvicorn",
)  # langgraph_sdk: a langgraph dependency


def _subcommands() -> list[str]:
    action = next(a for a in build_parser()._actions if a.dest == "command")
    return list(action.choices)


def test_every_subcommand_is_registered_once_in_help_order():
    assert _subcommands() == ["ask", "eval", "settings", "ingest", "search", "kg", "mcp", "verify", "stale"]
    assert len(COMMANDS) == 8


@pytest.mark.slow
def test_building_the_parser_imports_no_optional_extra():
    code = (
        "import json, sys; from rags_expert.cli import build_parser; build_parser(); "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {OPTIONAL_EXTRAS!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


@pytest.mark.slow
def test_an_unknown_subcommand_is_one_line_and_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "rags_expert.cli", "frobnicate"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "frobnicate" in done.stderr


def test_a_command_collects_garbage_less_often_and_gives_the_threshold_back(monkeypatch, capsys):
    """Issue 54: while a command runs, the youngest generation is collected every ``GC_THRESHOLD`` allocations,
    not Python's 700 (~0.15 s of an ``ask --local``); a host calling ``main`` in its own process gets its own
    threshold back, also when the command fails."""
    import gc

    from rags_expert import cli

    seen = []
    monkeypatch.setattr(cli, "settings_reference", lambda: seen.append(gc.get_threshold()) or "reference")
    before = gc.get_threshold()
    assert cli.main(["settings"]) == 0
    assert seen == [(cli.GC_THRESHOLD, *before[1:])] and gc.get_threshold() == before
    with pytest.raises(SystemExit):  # a usage error exits through argparse
        cli.main(["frobnicate"])
    assert gc.get_threshold() == before
    capsys.readouterr()
