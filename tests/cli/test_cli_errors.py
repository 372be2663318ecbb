"""``rags-expert`` errors and exit codes, as a script sees them (subprocesses).

* Invalid settings (environment) or flags: exactly one line naming the setting or flag and
  its constraint, exit 2, never a traceback, for every subcommand.
* ``ask``: 0 answered, 1 honest not-found, 2 error (the model is down, an empty question).
* ``kg``: 0 rows, 1 no rows, 2 model or database failure.
* ``ingest``: one warning per skipped file with its reason; nothing ingested is said plainly, exit 1.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, castle_script, error, request_kind

from rags_expert.kg.execution.result import KGQueryResult, build_result
from rags_expert.outcomes import exit_code

SUBCOMMANDS = {
    "ask": ["ask", "When?"],
    "search": ["search", "castle"],
    "ingest": ["ingest", "."],
    "kg": ["kg", "Which genes?", "--schema", "schema.yaml"],
    "eval": ["eval", "hotpotqa", "--limit", "1"],
    "settings": ["settings"],
    "mcp": ["mcp"],
}


def one_error_line(done) -> str:
    """The single stderr line of a failed run (asserting there is exactly one and no traceback)."""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return lines[0]


# --- settings and flags ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_invalid_setting_from_the_environment_is_one_line_and_exit_2(command, tmp_path):
    # llm.timeout is in a section both agents read, so every subcommand validates it
    done = run_cli(SUBCOMMANDS[command], cli_env(tmp_path, RAGS_EXPERT_LLM__TIMEOUT="banana"))
    assert done.returncode == 2 and done.stdout == ""
    assert one_error_line(done) == ("error: RAGS_EXPERT_LLM__TIMEOUT=banana is invalid: must be a number (llm.timeout)")


KG_COMMAND = SUBCOMMANDS["kg"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "variable", "path", "hint"),
    [
        (["ask", "q"], "RAGS_EXPERT_LLM__MODLE", "llm.modle", "; did you mean llm.model?"),
        (["search", "castle"], "RAGS_EXPERT_RETRIEVAL__TOPK", "retrieval.topk", "; did you mean retrieval.top_k?"),
        (KG_COMMAND, "RAGS_EXPERT_KG__MAXSTEPS", "kg.maxsteps", "; did you mean kg.max_steps?"),
        (KG_COMMAND, "RAGS_EXPERT_LMM__MODEL", "lmm", "; did you mean llm?"),  # a misspelt section
        (["ask", "q"], "RAGS_EXPERT_LLM__ZZZ", "llm.zzz", ""),
    ],
)
def test_a_misspelt_setting_is_one_line_naming_the_variable(command, variable, path, hint, tmp_path):
    done = run_cli(command, cli_env(tmp_path, **{variable: "x"}))
    assert done.returncode == 2 and done.stdout == ""
    assert one_error_line(done) == f"error: {variable} is not a setting ({path}){hint}"


@pytest.mark.slow
def test_the_other_agents_misspelt_setting_is_not_this_commands_error(tmp_path):
    """``settings`` builds the RAG agent's settings: a kg-section typo is the kg command's business."""
    done = run_cli(["settings"], cli_env(tmp_path, RAGS_EXPERT_KG__MAXSTEPS="3"))
    assert done.returncode == 0 and done.stdout.startswith("# Settings reference")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "variable", "value", "expected"),
    [
        (
            ["search", "castle"],
            "RAGS_EXPERT_RETRIEVAL__TOP_K",
            "-3",
            "=-3 is invalid: must be ≥ 1 (retrieval.top_k)",
        ),
        (KG_COMMAND, "RAGS_EXPERT_KG__MAX_STEPS", "0", "=0 is invalid: must be ≥ 1 (kg.max_steps)"),
        (
            ["search", "castle"],
            "RAGS_EXPERT_RETRIEVAL__MODE",
            "fuzzy",
            "=fuzzy is invalid: must be one of 'dense', 'sparse' or 'hybrid' (retrieval.mode)",
        ),
        (
            ["search", "castle"],
            "RAGS_EXPERT_RETRIEVAL__LIBRARY_TAGS",
            "a,b",
            "=a,b is invalid: not valid JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)) "
            "(retrieval.library_tags)",
        ),
        (
            ["search", "castle"],
            "RAGS_EXPERT_STORE__ENGINE",
            "rust",
            "=rust is invalid: must be one of 'edge' or 'local' (store.engine)",
        ),
        (
            KG_COMMAND,
            "RAGS_EXPERT_EMBEDDINGS__BATCH_SIZE",
            "0",
            "=0 is invalid: must be ≥ 1 (embeddings.batch_size)",
        ),
        (
            ["ask", "q"],
            "RAGS_EXPERT_BUDGET__MAX_CALLS",
            str(10**40),
            f"={10**40} is invalid: must be ≤ 100000 (budget.max_calls)",
        ),
        (
            ["search", "castle"],
            "RAGS_EXPERT_STORE__TIMEOUT",
            "1e300",
            "=1e300 is invalid: must be ≤ 86400.0 (store.timeout)",
        ),
    ],
)
def test_each_invalid_setting_is_named_with_its_constraint(command, variable, value, expected, tmp_path):
    done = run_cli(command, cli_env(tmp_path, **{variable: value}))
    assert done.returncode == 2
    assert one_error_line(done) == f"error: {variable}{expected}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["search", "castle", "-k", "-1"],
            "rags-expert search: error: argument -k: -1 is invalid: must be ≥ 1 (retrieval.top_k)",
        ),
        (
            ["ask", "When?", "-k", "0"],
            "rags-expert ask: error: argument -k/--top-k: 0 is invalid: must be ≥ 1 (retrieval.top_k)",
        ),
        (
            ["ask", "When?", "--top-k", "banana"],
            "rags-expert ask: error: argument -k/--top-k: banana is invalid: must be a whole number (retrieval.top_k)",
        ),
        (
            ["kg", "q", "--schema", "s.yaml", "--max-steps", "99"],
            "rags-expert kg: error: argument --max-steps: 99 is invalid: must be ≤ 50 (kg.max_steps)",
        ),
        (
            ["eval", "hotpotqa", "--limit", "0"],
            "rags-expert eval: error: argument --limit: 0 is invalid: must be ≥ 1",
        ),
        (
            ["ingest", ".", "--collection", ""],
            "rags-expert ingest: error: argument --collection: '' is invalid: must have at least 1 character(s) "
            "(store.collection)",
        ),
    ],
)
def test_invalid_flag_is_one_line_naming_it_and_exit_2(args, expected, tmp_path):
    done = run_cli(args, cli_env(tmp_path))
    assert done.returncode == 2
    assert one_error_line(done) == f"{expected} (see {expected.split(': error')[0]} --help)"


@pytest.mark.slow
def test_unexpected_error_is_one_redacted_line_and_exit_2(tmp_path):
    secret = "plain-secret-value-42"  # not key-shaped: only the configured value can mask it
    missing = tmp_path / secret
    env = cli_env(tmp_path, RAGS_EXPERT_LLM__API_KEY=secret)
    done = run_cli(["eval", "hotpotqa", "--data", str(missing), "-q"], env)
    assert done.returncode == 2
    line = one_error_line(done)
    assert line.startswith("error: FileNotFoundError: HotpotQA split not found:") and secret not in line
    verbose = run_cli(["-vv", "eval", "hotpotqa", "--data", str(missing), "-q"], env)
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr  # -vv shows more...
    assert secret not in verbose.stderr and verbose.stderr.splitlines()[-1] == line  # ...redacted, same last line


# --- ask exit codes ---------------------------------------------------------------------------------


_script = castle_script


@pytest.fixture(scope="module")
def kb_env(tmp_path_factory):
    """A data dir holding two documents, ingested through the CLI."""
    return ingest_docs(
        tmp_path_factory.mktemp("cli_errors"),
        {
            "castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n",
            "cheese.md": "# Cheese\n\nMura valley cheese is aged for nine months.\n",
        },
    )


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize(
    ("question", "script", "code"),
    [
        ("When was Castle Varen built?", _script, 0),
        (
            "What is the airspeed of a swallow?",
            lambda body: {"relevant": False} if request_kind(body) == "relevance" else _script(body),
            1,
        ),
        ("When was Castle Varen built?", lambda body: error(500, "model is down"), 2),
        ("When was Castle Varen built?", lambda body: error(401, "bad key"), 2),
        ("   ", _script, 2),
    ],
    ids=["answered", "not-found", "model-down", "model-refuses", "empty-question"],
)
def test_ask_exit_codes_tell_not_found_from_errors(kb_env, question, script, code):
    with OpenAIServer(script) as server:
        done = run_cli(["ask", question, "-q", "--json"], cli_env(kb_env, RAGS_EXPERT_LLM__BASE_URL=server.base_url))
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


# --- kg exit codes ----------------------------------------------------------------------------------


def _kg_result(rows=(), error=None, kinds=("syntax",)) -> KGQueryResult:
    """The result the KG loop builds from its final state (``build_result``), stopped out of steps."""
    attempts = [
        {
            "step": i + 1,
            "query": "MATCH (n) RETURN n",
            "rows": list(rows) if i == len(kinds) - 1 else [],
            "columns": [],
            "error": "x" if k else None,
            "error_kind": k,
            "score": None if k else 5.0,
        }
        for i, k in enumerate(kinds)
    ]
    state = {"messages": [], "question": "q", "attempts": attempts, "steps": len(attempts), "error": error or ""}
    return build_result(state, "llm_error" if error else "max_steps")


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (_kg_result(rows=[{"n": 1}], kinds=(None,)), 0),
        (_kg_result(kinds=(None, "syntax")), 1),  # queries ran (or were wrong): honestly nothing found
        (_kg_result(error="APIConnectionError after 1 attempt(s)", kinds=()), 2),  # the model failed
        (_kg_result(kinds=("connection", "auth")), 2),  # no query could use the database
    ],
    ids=["rows", "no-rows", "model-error", "database-down"],
)
def test_kg_exit_codes(result, code):
    """``rags-expert kg`` exits with the one ``exit_code`` of ``ask``, read from the result's end."""
    assert exit_code(result.end()) == code
    assert (result.exit_reason == "backend_error") == (code == 2 and not result.error)


# --- ingest -----------------------------------------------------------------------------------------


def _unreadable_files(folder: Path) -> dict[str, str]:
    """Files that cannot be ingested, each with the reason the warning must give."""
    (folder / "empty.md").write_text("")
    (folder / "blank.txt").write_text("  \n\n")
    (folder / "loop.md").symlink_to("loop.md")
    (folder / "dangling.md").symlink_to("nowhere.md")
    (folder / "blob.txt").write_bytes(b"\x00\x01binary" * 10)
    (folder / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    reasons = {
        "empty.md": "empty file",
        "blank.txt": "empty file (whitespace only)",
        "loop.md": "symlink loop",
        "dangling.md": "dangling symlink",
        "blob.txt": "binary content",
        "latin1.md": "not UTF-8 text",
    }
    if os.geteuid() != 0:  # root reads anything
        (folder / "locked.md").write_text("# Locked\n\nsome text\n")
        (folder / "locked.md").chmod(0)
        reasons["locked.md"] = "unreadable (Permission denied)"
    return reasons


@pytest.mark.slow
def test_ingest_of_nothing_ingestible_says_so_warns_once_per_file_and_exits_1(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    reasons = _unreadable_files(folder)
    (folder / "photo.png").write_bytes(b"\x89PNG")
    done = run_cli(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    for name, reason in reasons.items():
        warned = [line for line in lines if f"/{name}:" in line]
        assert len(warned) == 1 and reason in warned[0] and warned[0].startswith("WARNING skipping"), lines
    assert lines[-2] == (
        f"WARNING ignoring 1 file(s) of unsupported types: {folder / 'photo.png'} "
        "(supported: .csv .docx .htm .html .ipynb .jsonl .markdown .md .mdx .pdf .rst .tsv .txt)"
    )
    assert lines[-1] == (
        f"nothing was ingested from {folder}: {len(reasons)} file(s) skipped (reasons above); "
        "1 file(s) of unsupported types (supported: .csv .docx .htm .html .ipynb .jsonl .markdown .md .mdx .pdf .rst .tsv .txt)"
    )
    assert len(lines) == len(reasons) + 2 and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("make", ["empty-folder", "symlink-loop-path"])
def test_ingest_of_an_empty_folder_or_a_looping_link_exits_1(tmp_path, make):
    target = tmp_path / "in"
    if make == "empty-folder":
        target.mkdir()
        expected = f"nothing was ingested from {target}: no files found"
    else:
        target.symlink_to(target)
        expected = f"nothing was ingested from {target}: 1 file(s) skipped (reasons above)"
    done = run_cli(["ingest", str(target), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == expected


@pytest.mark.slow
def test_ingest_with_some_good_files_succeeds_and_counts_the_skipped(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nA document with text in it.\n")
    (folder / "empty.md").write_text("")
    env = cli_env(tmp_path / "data")
    done = run_cli(["ingest", str(folder), "-q"], env)
    assert done.returncode == 0
    assert done.stdout.startswith("1 files, 1 chunks (1 new, 0 removed") and "1 skipped" in done.stdout
    assert done.stderr.splitlines() == [f"WARNING skipping {folder / 'empty.md'}: empty file"]
    (folder / "good.md").write_text("")  # emptied: its chunks leave the knowledge base
    again = run_cli(["ingest", str(folder), "-q"], env)
    assert again.returncode == 0 and "1 removed" in again.stdout and "2 skipped" in again.stdout


@pytest.mark.slow
def test_ingest_names_the_unsupported_files_like_the_skipped_ones_up_to_five(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nA document with text in it.\n")
    (folder / "empty.md").write_text("")
    (folder / "table.xlsx").write_text("a,b\n")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    env = cli_env(tmp_path / "data")
    done = run_cli(["ingest", str(folder), "-q"], env)
    assert done.returncode == 0 and "1 skipped, 2 unsupported ignored)" in done.stdout
    assert done.stderr.splitlines() == [
        f"WARNING skipping {folder / 'empty.md'}: empty file",
        f"WARNING ignoring 2 file(s) of unsupported types: {folder / 'photo.png'}, {folder / 'table.xlsx'} "
        "(supported: .csv .docx .htm .html .ipynb .jsonl .markdown .md .mdx .pdf .rst .tsv .txt)",
    ]
    for i in range(5):
        (folder / f"scan{i}.tiff").write_bytes(b"II*")
    many = run_cli(["ingest", str(folder), "-q"], env)
    assert many.returncode == 0 and "7 unsupported ignored)" in many.stdout
    named = ", ".join(str(folder / n) for n in ["photo.png", "scan0.tiff", "scan1.tiff", "scan2.tiff", "scan3.tiff"])
    assert f"WARNING ignoring 7 file(s) of unsupported types: {named} and 2 more (supported: " in many.stderr


@pytest.mark.slow
def test_ask_local_with_a_missing_model_file_is_one_line_and_exit_2(tmp_path):
    """The server is spawned before the agent is built: a model file that is not there still ends in one line."""
    env = cli_env(tmp_path / "data", RAGS_EXPERT_LOCAL__MODEL_PATH=str(tmp_path / "missing.gguf"))
    done = run_cli(["ask", "--local", "-q", "Who built the castle?"], env)  # -q: no progress line
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == f"error: LocalModelError: model file not found: {tmp_path / 'missing.gguf'} (local.model_path)"
    )
    assert done.stdout == ""


@pytest.mark.slow
def test_ingest_says_how_many_files_the_folders_ragsignore_left_out(tmp_path):
    folder = tmp_path / "docs"
    (folder / "results").mkdir(parents=True)
    (folder / "guide.md").write_text("# Guide\n\nThe departure gate is B7.\n")
    (folder / "results" / "history.md").write_text("# History\n\nOld numbers.\n")
    (folder / "changelog.md").write_text("# Changes\n\nVersion 2.\n")
    (folder / ".ragsignore").write_text("results  # measured, not asked about\nchangelog.md\n")
    done = run_cli(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 files, 1 chunks (1 new") and "2 left out by .ragsignore)" in done.stdout
