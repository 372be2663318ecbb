"""``rags-expert ingest`` over files that are not what their names say, as a script sees it (subprocesses): a PDF
that pypdf gives up on, a named pipe, a file name with a newline, a file replaced by a folder. Each is one
warning line naming the file, and the rest of the folder is ingested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

import pytest
from helpers.cli_run import ROOT, cli_env, run_cli
from helpers.pdf import pdf_bytes

GOOD = "# Good\n\nA document with text in it about {word}.\n"


def one_page_pdf(contents: bytes) -> bytes:
    """A one-page PDF with a font, whose page content stream object (number 4) is ``contents``."""
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R"
            b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
            contents,
        ]
    )


def decompression_bomb() -> bytes:
    """A page whose FlateDecode content stream inflates 100 KB into 100 MB (past pypdf's 75 MB limit)."""
    data = zlib.compress(b"BT /F1 12 Tf (hi) Tj ET " + b" " * (100 * 2**20), 9)
    return one_page_pdf(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data))


def self_referencing() -> bytes:
    """A page whose content stream's /Length is the stream object itself."""
    return one_page_pdf(b"<< /Length 4 0 R >>\nstream\nBT /F1 12 Tf (hi) Tj ET\nendstream")


@pytest.mark.slow
def test_a_pdf_or_jsonl_the_parser_gives_up_on_is_one_warning_and_the_rest_is_ingested(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(GOOD.format(word="apples"))
    (folder / "bomb.pdf").write_bytes(decompression_bomb())
    (folder / "loop.pdf").write_bytes(self_referencing())
    (folder / "deep.jsonl").write_text('{"text": ' + "[" * 100_000 + "\n")  # too deep for the JSON parser
    (folder / "z.md").write_text(GOOD.format(word="zebras"))  # after the bad files: still ingested
    done = run_cli(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"WARNING skipping {folder / 'bomb.pdf'}: unreadable PDF (LimitReachedError)",
        f"WARNING skipping {folder / 'deep.jsonl'}: unreadable JSONL (RecursionError)",
        f"WARNING skipping {folder / 'loop.pdf'}: unreadable PDF (LimitReachedError)",
    ]
    assert done.stdout.startswith("2 files, 2 chunks (2 new, ") and "3 skipped" in done.stdout


@pytest.mark.slow
def test_a_named_pipe_is_skipped_with_a_warning_not_read(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD.format(word="apples"))
    os.mkfifo(folder / "pipe.md")
    env = cli_env(tmp_path / "data")
    for args in ([str(folder)], [str(folder / "pipe.md"), str(folder / "good.md")]):  # under a folder, or named
        done = subprocess.run(
            [sys.executable, "-m", "rags_expert.cli", "ingest", *args, "-q"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,  # reading the pipe would wait for a writer forever
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines() == [f"WARNING skipping {folder / 'pipe.md'}: not a regular file (a named pipe)"]
        assert done.stdout.startswith("1 files, 1 chunks (") and "1 skipped" in done.stdout


@pytest.mark.slow
def test_a_newline_in_a_file_name_cannot_forge_a_log_line(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD.format(word="apples"))
    (folder / "x\nWARNING forged.md").write_bytes(b"a\x00b")
    (folder / "y\x1b[31m\nred.xlsx").write_text("a,b\n")
    done = run_cli(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"WARNING skipping {folder}/x\\nWARNING forged.md: binary content (NUL bytes), not text",
        f"WARNING ignoring 1 file(s) of unsupported types: {folder}/y\\x1b[31m\\nred.xlsx "
        "(supported: .csv .docx .htm .html .ipynb .jsonl .markdown .md .mdx .pdf .rst .tsv .txt)",
    ]
    alone = run_cli(["ingest", str(folder / "x\nWARNING forged.md"), "-q"], cli_env(tmp_path / "data"))
    assert alone.returncode == 1
    assert alone.stderr.splitlines() == [
        f"WARNING skipping {folder}/x\\nWARNING forged.md: binary content (NUL bytes), not text",
        f"nothing was ingested from {folder}/x\\nWARNING forged.md: 1 file(s) skipped (reasons above)",
    ]


def _sources(query: str, env: dict[str, str]) -> set[str]:
    done = run_cli(["search", query, "--json", "-k", "10"], env)
    assert done.returncode == 0, done.stderr
    return {hit["source"] for hit in json.loads(done.stdout)}


@pytest.mark.slow
def test_prune_drops_a_file_replaced_by_a_folder_and_ingests_the_folders_files(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keep.md").write_text(GOOD.format(word="apples"))
    (folder / "notes.md").write_text(GOOD.format(word="zanzibar"))
    env = cli_env(tmp_path / "data")
    assert run_cli(["ingest", str(folder), "-q"], env).returncode == 0
    assert str(folder / "notes.md") in _sources("zanzibar", env)
    (folder / "notes.md").unlink()
    (folder / "notes.md").mkdir()  # same name, now a folder
    (folder / "notes.md" / "inner.md").write_text(GOOD.format(word="quokkas"))
    done = run_cli(["ingest", str(folder), "-q", "--prune"], env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("2 files, 2 chunks (1 new, 1 removed, 1 files unchanged, 1 pruned, 0 skipped)")
    assert _sources("zanzibar quokkas apples", env) == {str(folder / "keep.md"), str(folder / "notes.md" / "inner.md")}
