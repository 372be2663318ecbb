"""``rags-expert ingest`` as a user meets issue 53's findings (subprocesses): a link to a file outside the folder
is one warning and never stored, and a read-only data folder is one line naming it and ``RAGS_EXPERT_DATA_DIR``."""

from __future__ import annotations

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
