"""``ask --quotes``, ``verify`` and ``stale`` as a user runs them: real processes, a real model server on
127.0.0.1, an embedded knowledge base that is edited and re-ingested between the commands."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import cli_env, run_cli
from helpers.openai_server import OpenAIServer, prompt_text, request_kind, tag_content

pytestmark = pytest.mark.slow

CASTLE = "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n\nIts moat is fed by the Mura.\n"
QUESTION = "When was Castle Varen built?"


def reading_script(body: dict[str, Any]) -> Any:
    """A capable model that answers with the year the castle chunk gives (so a re-ask sees an edit)."""
    kind = request_kind(body)
    if kind == "relevance":
        return {"relevant": "Castle Varen" in tag_content(body, "chunk")}
    if kind in ("grounded", "useful"):
        return {kind: True}
    if kind == "rephrase":
        return {"query": "castle construction year"}
    year = re.search(r"built in (\d{4})", prompt_text(body))
    return f"Castle Varen was built in {year.group(1) if year else 'an unknown year'} [1]."


@pytest.fixture
def saved(tmp_path: Path):
    """The docs folder, the CLI environment and a folder with the answer saved by ``ask --json``."""
    docs, answers = tmp_path / "docs", tmp_path / "answers"
    docs.mkdir()
    answers.mkdir()
    (docs / "castle.md").write_text(CASTLE)
    (docs / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    with OpenAIServer(reading_script) as server:
        env = cli_env(tmp_path / "data", RAGS_EXPERT_LLM__BASE_URL=server.base_url)
        assert run_cli(["ingest", str(docs), "-q"], env).returncode == 0
        done = run_cli(["ask", QUESTION, "--json", "-q"], env)
        assert done.returncode == 0, done.stderr
        (answers / "castle.json").write_text(done.stdout)
        yield docs, env, answers


def _edit(docs: Path, env: dict[str, str], old: str, new: str) -> None:
    path = docs / "castle.md"
    path.write_text(path.read_text().replace(old, new))
    assert run_cli(["ingest", str(docs), "-q"], env).returncode == 0


def test_ask_quotes_prints_the_supporting_quote_under_its_source(saved):
    _, env, answers = saved
    done = run_cli(["ask", QUESTION, "--quotes", "-q"], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Castle Varen was built in 1412 [1]."
    assert lines[1].startswith("[1] Castle Varen")
    assert lines[2] == '    "Castle Varen was built in 1412 by Duke Albrecht."'
    saved_answer = json.loads((answers / "castle.json").read_text())
    (citation,) = saved_answer["citations"]
    assert citation["span"]["quote"] == "Castle Varen was built in 1412 by Duke Albrecht."
    assert citation["span"]["uid"] == saved_answer["sources"][0]["uid"]


def test_ask_quotes_names_a_sentence_no_source_supports(saved):
    _, env, _ = saved

    def haunted(body: dict[str, Any]) -> Any:
        reply = reading_script(body)
        return reply + " It is haunted by a blue ghost." if request_kind(body) == "answer" else reply

    with OpenAIServer(haunted) as server:
        done = run_cli(["ask", QUESTION, "--quotes", "-q"], {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[-1]
        == 'unsupported: "It is haunted by a blue ghost." (no span of the sources supports it)'
    )


def test_verify_is_ok_then_flags_the_edited_cited_sentence(saved):
    docs, env, answers = saved
    done = run_cli(["verify", str(answers / "castle.json")], env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("ok ")
    _edit(docs, env, "Its moat is fed by the Mura.", "Its moat is dry.")  # not the cited sentence
    done = run_cli(["verify", str(answers / "castle.json"), "--json"], env)
    assert done.returncode == 0, done.stderr
    assert [c["status"] for c in json.loads(done.stdout)] == ["moved"]
    _edit(docs, env, "built in 1412", "built in 1413")
    done = run_cli(["verify", str(answers / "castle.json")], env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("changed ") and "Castle Varen was built in 1412." in done.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "error: {path}: cannot read it: No such file or directory"),
        (
            "{not json",
            "error: {path}: not a JSON answer (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        (
            '{"answer": "x"}',
            "error: {path}: not a saved answer: no 'citations' list (rags-expert ask --json writes one)",
        ),
        (
            '{"answer": "Not found.", "outcome": "failure", "closest": [{"n": 1, "source": "castle.md"}]}',
            "error: {path}: not a saved answer: closest passage 1 has no quote",
        ),
    ],
    ids=["missing", "not-json", "no-citations", "closest-without-quote"],
)
def test_verify_a_bad_file_is_one_line_and_exit_2(tmp_path: Path, content: str | None, message: str):
    path = tmp_path / "answer.json"
    if content is not None:
        path.write_text(content)
    env = cli_env(tmp_path / "data")
    done = run_cli(["verify", str(path)], env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [message.format(path=path)]


NOT_FOUND = "How deep is the moat of Castle Varen?"


@pytest.fixture
def not_found(saved):
    """``saved``, plus a not-found answer saved with ``ask --json`` that quotes the castle's two sentences as its
    closest passages (the extractive fallback of a model that drafts nothing finds no depth in them)."""
    docs, env, answers = saved
    with OpenAIServer(reading_script) as server:
        asked = run_cli(
            ["ask", NOT_FOUND, "--json", "-q"],
            {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url, "RAGS_EXPERT_EVIDENCE__DRAFT": "false"},
        )
    assert asked.returncode == 1, asked.stderr
    reply = json.loads(asked.stdout)
    assert {c["quote"] for c in reply["closest"]} == {
        "Castle Varen was built in 1412 by Duke Albrecht.",
        "Its moat is fed by the Mura.",
    }
    (answers / "castle.json").unlink()
    (answers / "moat.json").write_text(asked.stdout)
    return docs, env, answers


def test_verify_and_stale_check_the_closest_passages_of_a_not_found_answer(not_found):
    """``verify`` said "the answer cites nothing" and ``stale`` nothing stale after a quoted passage changed."""
    docs, env, answers = not_found
    moat = answers / "moat.json"
    done = run_cli(["verify", str(moat)], env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = sorted(done.stdout.splitlines(), key=lambda line: "moat" in line)
    assert [line.split()[0] for line in lines] == ["ok", "ok"]
    assert lines[0].endswith("  closest passage: Castle Varen was built in 1412 by Duke Albrecht.")
    assert lines[1].endswith("  closest passage: Its moat is fed by the Mura.")
    assert run_cli(["stale", str(answers)], env).stdout == "0 stale answer(s)\n"
    _edit(docs, env, "Its moat is fed by the Mura.", "Its moat is dry.")
    done = run_cli(["verify", str(moat), "--json"], env)
    assert done.returncode == 1, done.stderr
    checks = {c["sentence"]: (c["status"], c["kind"]) for c in json.loads(done.stdout)}
    assert checks == {
        "Castle Varen was built in 1412 by Duke Albrecht.": ("moved", "closest"),  # its chunk changed, not it
        "Its moat is fed by the Mura.": ("changed", "closest"),
    }
    done = run_cli(["stale", str(answers)], env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [f"{moat}: 1 changed", "1 stale answer(s)"]


def test_stale_lists_the_answer_and_reasks_it(saved):
    docs, env, answers = saved
    done = run_cli(["stale", str(answers)], env)
    assert (done.returncode, done.stdout) == (0, "0 stale answer(s)\n"), done.stderr
    _edit(docs, env, "built in 1412", "built in 1413")
    with OpenAIServer(reading_script) as server:
        env = {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url}
        done = run_cli(["stale", str(answers), "--reask"], env)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{answers / 'castle.json'}: 1 changed"
    assert lines[1] == "1 stale answer(s)"
    assert "  old: Castle Varen was built in 1412 [1]." in lines
    assert "  new: Castle Varen was built in 1413 [1]." in lines


def test_stale_checks_the_answers_kept_in_a_checkpointer(saved, postgres_url, postgres_server):
    docs, env, _ = saved
    env = {**env, "RAGS_EXPERT_CHECKPOINTER__URL": postgres_url}
    for thread in ("castle", "other"):
        done = run_cli(["ask", QUESTION, "--thread", thread, "-q"], env)
        assert done.returncode == 0, done.stderr
    done = run_cli(["stale"], env)
    assert (done.returncode, done.stdout) == (0, "0 stale answer(s)\n"), done.stderr
    _edit(docs, env, "built in 1412", "built in 1413")
    done = run_cli(["stale", "--reask"], env)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == ["thread:castle#0: 1 changed", "thread:other#0: 1 changed", "2 stale answer(s)"]
    assert lines.count("  new: Castle Varen was built in 1413 [1].") == 2
    assert postgres_server.password not in done.stdout + done.stderr


def test_stale_without_a_folder_or_a_checkpointer_is_one_line_and_exit_2(tmp_path: Path):
    done = run_cli(["stale"], cli_env(tmp_path / "data"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: give a FOLDER of saved answers, --checkpointer-url, or both"]
