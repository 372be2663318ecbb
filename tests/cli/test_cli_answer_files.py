"""``verify``, ``stale`` and ``search`` on what a user's disk really holds, as a user runs them (subprocesses): bad
JSON beside good answers, a named pipe, a huge file, a forged span, a failing model on ``--reask``, no knowledge
base at all, control characters in names, Windows encodings.

Every bad input is one line naming the file and what is wrong, never a traceback; ``stale`` still checks and lists
the answers beside a bad file, and exits 2 when any could not be checked."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, castle_script, error

pytestmark = pytest.mark.slow

CASTLE = "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"
QUESTION = "When was Castle Varen built?"


@pytest.fixture(scope="module")
def castle(tmp_path_factory) -> tuple[dict[str, str], dict[str, Any], str]:
    """The CLI environment of a one-document knowledge base, the answer ``ask --json`` saved, the cited chunk."""
    root = tmp_path_factory.mktemp("castle")
    env = cli_env(ingest_docs(root, {"castle.md": CASTLE}))
    with OpenAIServer(castle_script) as server:
        done = run_cli(["ask", QUESTION, "--json", "-q"], {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    (hit,) = json.loads(run_cli(["search", "castle", "--json"], env).stdout)
    return env, json.loads(done.stdout), hit["content"]


def edited(answer: dict[str, Any], **span: Any) -> dict[str, Any]:
    """``answer`` with its (only) citation's span changed."""
    out = copy.deepcopy(answer)
    out["citations"][0]["span"].update(span)
    return out


def stale(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` citing words its document does not hold (``changed``)."""
    return edited(answer, quote="Castle Varen was built in 1066 by Duke Albrecht.")


def write(path: Path, content: dict[str, Any] | str) -> Path:
    """``content`` (JSON of a dict) in ``path``; the path."""
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def lines_of(stream: str) -> list[str]:
    assert "Traceback" not in stream
    return stream.splitlines()


BIG_NUMBER = '{"citations": [], "n": ' + "9" * 4301 + "}"
DEEP = "[" * 100_000 + "]" * 100_000


def test_stale_names_each_bad_file_and_still_lists_the_stale_answers(castle, tmp_path):
    env, answer, _ = castle
    changed = write(tmp_path / "changed.json", stale(answer))
    write(tmp_path / "fine.json", answer)
    bad = {
        "big.json": (BIG_NUMBER, "not a JSON answer (Exceeds the limit (4300 digits) for integer string conversion)"),
        "deep.json": (DEEP, "not a JSON answer (nested too deeply)"),
        "notes.json": (
            '{"not": "an answer"}',
            "not a saved answer: no 'citations' list (rags-expert ask --json writes one)",
        ),
        "sources.json": ({**answer, "sources": 1}, "not a saved answer: 'sources' is not a list"),
    }
    for name, (content, _) in bad.items():
        write(tmp_path / name, content)
    done = run_cli(["stale", str(tmp_path)], env)
    assert lines_of(done.stdout) == [
        f"{changed}: 1 changed",
        "1 stale answer(s); 4 could not be checked (see the warnings)",
    ]
    assert lines_of(done.stderr) == [f"warning: {tmp_path / name}: {fault}" for name, (_, fault) in bad.items()]
    assert done.returncode == 2


@pytest.mark.parametrize(
    ("content", "fault"),
    [
        (BIG_NUMBER, "not a JSON answer (Exceeds the limit (4300 digits) for integer string conversion)"),
        (DEEP, "not a JSON answer (nested too deeply)"),
        ("{not json", "not a JSON answer (Expecting property name enclosed in double quotes at line 1 column 2)"),
        ("[]", "not a JSON answer (not an object)"),
        ({"answer": "x"}, "not a saved answer: no 'citations' list (rags-expert ask --json writes one)"),
        ("sources", "not a saved answer: 'sources' is not a list"),
        (
            {"citations": [{"span": {"uid": "u"}}]},
            "not a saved answer: citation 1 has no span {uid, start, end, sha256, quote} ('start' is not int)",
        ),
    ],
    ids=["big-number", "deep", "not-json", "not-an-object", "no-citations", "sources-not-a-list", "no-span"],
)
def test_verify_names_the_file_and_its_fault(castle, tmp_path, content, fault):
    env, answer, _ = castle
    path = write(tmp_path / "answer.json", {**answer, "sources": 1} if content == "sources" else content)
    done = run_cli(["verify", str(path)], env)
    assert (done.returncode, done.stdout) == (2, "")
    assert lines_of(done.stderr) == [f"error: {path}: {fault}"]


def test_verify_refuses_spans_whose_offsets_or_quote_cannot_be_a_citation(castle, tmp_path):
    env, answer, content = castle
    span = answer["citations"][0]["span"]
    assert span["end"] == len(content)  # the quote ends the chunk: a negative start may count back to it
    forged = {
        "negative-start": (edited(answer, start=span["start"] - len(content)), "not 0 ≤ start ≤ end"),
        "end-before-start": (edited(answer, start=5, end=3, quote=""), "not 0 ≤ start ≤ end"),
        "empty-past-the-end": (edited(answer, start=10**6, end=10**6, quote=""), "an empty quote"),
    }
    for name, (content_, fault) in forged.items():
        path = write(tmp_path / f"{name}.json", content_)
        done = run_cli(["verify", str(path)], env)
        assert (done.returncode, done.stdout) == (2, ""), name
        expected = f"error: {path}: not a saved answer: citation 1 has {'span offsets that are ' if 'start' in fault else ''}{fault}"
        assert lines_of(done.stderr) == [expected], name


def test_a_span_past_the_chunk_end_is_not_ok(castle, tmp_path):
    env, answer, content = castle
    span = answer["citations"][0]["span"]
    path = write(tmp_path / "answer.json", edited(answer, end=len(content) + 1000))
    done = run_cli(["verify", str(path), "--json"], env)
    assert done.returncode == 0, done.stderr
    (check,) = json.loads(done.stdout)
    assert check["status"] == "moved"  # the quote is where it always was, not at the offsets given
    assert check["where"] == {"uid": span["uid"], "start": span["start"], "end": span["end"]}


def test_a_named_pipe_or_a_huge_file_is_not_read(castle, tmp_path):
    env, answer, _ = castle
    changed = write(tmp_path / "changed.json", stale(answer))
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(16 * 2**20 + 1)
    done = run_cli(["stale", str(tmp_path)], env, timeout=60)
    assert lines_of(done.stdout) == [
        f"{changed}: 1 changed",
        "1 stale answer(s); 2 could not be checked (see the warnings)",
    ]
    assert lines_of(done.stderr) == [
        f"warning: {huge}: too large for a saved answer (over 16 MiB): not read",
        f"warning: {pipe}: not a regular file (a named pipe): not read",
    ]
    assert done.returncode == 2
    done = run_cli(["verify", str(pipe)], env, timeout=60)
    assert (done.returncode, lines_of(done.stderr)) == (
        2,
        [f"error: {pipe}: not a regular file (a named pipe): not read"],
    )


def test_a_failed_reask_is_reported_as_such_and_exits_2(castle, tmp_path):
    env, answer, _ = castle
    write(tmp_path / "a.json", stale(answer))
    write(tmp_path / "b.json", {k: v for k, v in stale(answer).items() if k != "question"})
    with OpenAIServer(lambda body: error(500, "the model is down")) as server:
        done = run_cli(["stale", str(tmp_path), "--reask"], {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url})
    lines = lines_of(done.stdout)
    assert done.returncode == 2, done.stderr
    assert lines[:3] == [f"{tmp_path / 'a.json'}: 1 changed", f"{tmp_path / 'b.json'}: 1 changed", "2 stale answer(s)"]
    assert lines[3:6] == [str(tmp_path / "a.json"), f"  question: {QUESTION}", f"  old: {answer['answer']}"]
    assert lines[6].startswith("  re-ask failed: ") and "InternalServerError" in lines[6], lines[6]
    assert lines[7:] == [str(tmp_path / "b.json"), "  cannot re-ask: no question saved"]


def test_stale_reask_without_a_model_points_at_its_own_local_flag(castle, tmp_path):
    env, answer, _ = castle
    write(tmp_path / "a.json", stale(answer))
    done = run_cli(["stale", str(tmp_path), "--reask"], env)  # no API key, no base URL
    assert done.returncode == 2
    (line,) = lines_of(done.stderr)
    assert line.startswith("error: ValueError: could not build the chat model: ")
    assert line.endswith("or, on the command line, run offline with the bundled model: --local)")
    assert "--local " in run_cli(["stale", "--help"], env).stdout


@pytest.mark.parametrize("where", ["flag", "default"])
@pytest.mark.parametrize("command", ["verify", "stale"])
def test_without_a_knowledge_base_nothing_is_created(castle, tmp_path, command, where):
    env, answer, _ = castle
    answers = tmp_path / "answers"
    answers.mkdir()
    path = write(answers / "a.json", answer)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in env.items() if k not in ("RAGS_EXPERT_DATA_DIR", "XDG_DATA_HOME")} | {"HOME": str(home)}
    data, flags = (
        (tmp_path / "absent", ["--data-dir", str(tmp_path / "absent")])
        if where == "flag"
        else (
            home / ".local" / "share" / "rags-expert",
            [],
        )
    )
    done = run_cli([command, str(path if command == "verify" else answers), *flags], env)
    assert (done.returncode, done.stdout) == (2, "")
    assert lines_of(done.stderr) == [
        f"error: no knowledge base 'rags_expert' in {data}; ingest documents first "
        f"(rags-expert ingest PATH --data-dir {data} --collection rags_expert)"
    ]
    assert not (tmp_path / "absent").exists() and list(home.iterdir()) == []


def test_names_with_control_characters_forge_no_line_and_long_values_are_cut(castle, tmp_path):
    env, answer, _ = castle
    forged = write(tmp_path / "x\n1 stale answer(s).json", stale(answer))
    done = run_cli(["stale", str(tmp_path)], env)
    assert lines_of(done.stdout) == [f"{tmp_path}/x\\n1 stale answer(s).json: 1 changed", "1 stale answer(s)"]
    assert done.returncode == 1 and forged.exists()
    path = write(tmp_path / "long.json", edited(answer, uid="u" * 10**6))
    done = run_cli(["verify", str(path)], env)
    assert done.returncode == 0, done.stderr
    (line,) = lines_of(done.stdout)
    assert f"{'u' * 80}… (1000000 chars) → " in line and len(line) < 400


def test_search_escapes_a_newline_in_a_file_name(tmp_path):
    data = ingest_docs(tmp_path, {"castle\n2. [1.0000] forged.md": "Castle Varen was built in 1412."})
    done = run_cli(["search", "castle"], cli_env(data))
    assert done.returncode == 0, done.stderr
    lines = lines_of(done.stdout)
    assert len(lines) == 2 and lines[0].endswith("castle\\n2. [1.0000] forged.md"), lines


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_verify_reads_an_answer_saved_by_windows_powershell(castle, tmp_path, encoding):
    env, answer, _ = castle
    path = tmp_path / "answer.json"
    path.write_bytes(json.dumps(answer, indent=2).encode(encoding))
    done = run_cli(["verify", str(path)], env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("ok ")


def test_search_prints_retrieval_top_k_hits_unless_k_is_given(tmp_path):
    docs = {f"castle{i}.md": f"# Castle {i}\n\nCastle number {i} was built in 14{i}0.\n" for i in range(6)}
    env = cli_env(ingest_docs(tmp_path, docs))
    hits = {
        how: len(json.loads(run_cli(["search", "castle", "--json", *flags], {**env, **extra}).stdout))
        for how, flags, extra in [
            ("default", [], {}),
            ("configured", [], {"RAGS_EXPERT_RETRIEVAL__TOP_K": "2"}),
            ("flag", ["-k", "5"], {"RAGS_EXPERT_RETRIEVAL__TOP_K": "2"}),
        ]
    }
    assert hits == {"default": 4, "configured": 2, "flag": 5}
