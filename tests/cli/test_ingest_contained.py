"""``rags-expert ingest`` as a user meets issue 53's findings (subprocesses): a link to a file outside the folder
is one warning and never stored, a read-only data folder is one line naming it and ``RAGS_EXPERT_DATA_DIR``, and
valid files once skipped for the wrong reason (a long CSV cell, UTF-16 text, an nbformat 3 notebook) are read."""

from __future__ import annotations

import codecs
import json

import pytest
from helpers.cli_run import cli_env, read_only, run_cli

SECRET = "# Deploy keys\n\nThe production deploy key is zebra-lantern-42.\n"


def _search(query: str, env: dict[str, str]) -> list[dict]:
    done = run_cli(["search", query, "--json", "-k", "5"], env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_a_link_to_a_file_outside_the_folder_is_one_warning_and_never_stored(tmp_path):
    docs, target = tmp_path / "docs", tmp_path / "home" / "keys.md"
    docs.mkdir()
    target.parent.mkdir()
    target.write_text(SECRET)
    (docs / "guide.md").write_text("# Guide\n\nDeploy with the release script.\n")
    (docs / "keys.md").symlink_to(target)
    env = cli_env(tmp_path / "data")
    done = run_cli(["ingest", str(docs), "-q"], env)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"WARNING skipping {docs / 'keys.md'}: a symbolic link to {target}, outside the ingested folder: not followed "
        "(set ingestion.follow_outside_links = true, RAGS_EXPERT_INGESTION__FOLLOW_OUTSIDE_LINKS=true, to ingest it)"
    ]
    assert "1 skipped" in done.stdout.splitlines()[0]
    assert (
        done.stdout.splitlines()[1]
        == "  Markdown: 1 file, 1 chunk, 1 skipped (1 linked outside the folder; reasons above)"
    )
    assert [h["source"] for h in _search("production deploy key", env)] == [str(docs / "guide.md")]

    allowed = {**env, "RAGS_EXPERT_INGESTION__FOLLOW_OUTSIDE_LINKS": "true"}
    assert run_cli(["ingest", str(docs), "-q"], allowed).returncode == 0
    assert _search("production deploy key", env)[0]["source"] == str(docs / "keys.md")  # under the link's path
    (docs / "keys.md").unlink()
    pruned = run_cli(["ingest", str(docs), "-q", "--prune"], allowed)
    assert pruned.returncode == 0 and "1 pruned" in pruned.stdout
    assert [h["source"] for h in _search("production deploy key", env)] == [str(docs / "guide.md")]


@pytest.mark.slow
def test_a_read_only_data_folder_is_one_line_naming_it_and_the_setting(tmp_path):
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nDeploy with the release script.\n")
    env = cli_env(data)
    assert run_cli(["ingest", str(docs), "-q"], env).returncode == 0
    with read_only(data) as (wrap, reason):
        expected = (
            f"error: the knowledge base needs a writable folder: cannot write in {data / 'edge'} ({reason}); every "
            "command that opens it writes its lock there, a search too: set RAGS_EXPERT_DATA_DIR (--data-dir, "
            "setting store.data_dir) to a folder you can write"
        )
        for args in (["ingest", str(docs), "-q"], ["search", "release script"]):
            done = run_cli(args, env, wrap=wrap)
            assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [expected]), args
        fresh = run_cli(["ingest", str(docs), "-q", "--data-dir", str(data / "new")], env, wrap=wrap)
        assert fresh.returncode == 2 and fresh.stderr.splitlines() == [
            expected.replace(str(data / "edge"), str(data / "new" / "edge"))
        ]
    assert [h["source"] for h in _search("release script", env)] == [str(docs / "guide.md")]  # nothing lost


NOTEBOOK_V3 = {
    "metadata": {"name": "orbits"},
    "nbformat": 3,
    "nbformat_minor": 0,
    "worksheets": [
        {
            "metadata": {},
            "cells": [
                {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Orbital periods"]},
                {"cell_type": "markdown", "metadata": {}, "source": ["Kepler's third law gives the period."]},
                {
                    "cell_type": "code",
                    "collapsed": False,
                    "input": ["period = semi_major_axis ** 1.5"],
                    "language": "python",
                    "metadata": {},
                    "outputs": [{"output_type": "pyout", "prompt_number": 1, "metadata": {}, "text": ["11.86"]}],
                    "prompt_number": 1,
                },
            ],
        }
    ],
}


@pytest.mark.slow
def test_a_long_csv_cell_utf16_text_and_an_nbformat_3_notebook_are_read(tmp_path):
    files: dict[str, bytes] = {
        "essays.csv": f'title,text\nLong essay,"{"marmalade " * 20_000}"\n'.encode(),  # a 200,000-character cell
        "codes.tsv": codecs.BOM_UTF16_LE + "code\tmeaning\n418\tteapot refuses coffee\n".encode("utf-16-le"),
        "orbits.ipynb": json.dumps(NOTEBOOK_V3).encode(),
    }
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, data in files.items():
        (docs / name).write_bytes(data)
    env = cli_env(tmp_path / "data")
    done = run_cli(["ingest", str(docs), "-q"], env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("3 files,") and "0 skipped" in done.stdout
    assert _search("teapot refuses coffee", env)[0]["content"] == "codes\ncode: 418; meaning: teapot refuses coffee"
    orbit = _search("Kepler period", env)[0]
    assert orbit["title"] == "Orbital periods" and "period = semi_major_axis ** 1.5" in orbit["content"]
    assert any(h["source"].endswith("essays.csv") for h in _search("marmalade", env))
