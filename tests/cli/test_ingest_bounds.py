"""``rags-expert ingest`` on hostile files, as a script sees it (a subprocess): a .docx decompression bomb is skipped
before it is inflated, a PDF page ruled as graph paper is read as plain text, a line of unclosed Hugo openers is
reduced in linear time; each bound is one warning line naming it and its setting, and the rest is ingested.

The bounds are set low through their environment variables so that small files show them quickly."""

from __future__ import annotations

import time

import pytest
from helpers.cli_run import cli_env, run_cli

GOOD = "# Good\n\nA document with text in it about apples.\n"


@pytest.mark.slow
def test_hostile_files_are_each_one_line_naming_the_bound_and_the_rest_is_ingested(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    from helpers.pdf import graph_paper_pdf
    from helpers.word import bomb

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(GOOD)
    (folder / "bomb.docx").write_bytes(bomb("Never read.", inflated_mb=16))  # and 0.8 MiB of styles
    (folder / "grid.pdf").write_bytes(graph_paper_pdf(30))  # 900 crossings
    (folder / "hugo.md").write_text("# Hugo\n\n" + "{{< " * 25_000 + "\n")  # 100 KB of unclosed openers
    env = cli_env(
        tmp_path / "data",
        RAGS_EXPERT_INGESTION__MAX_UNZIPPED_MB="8",
        RAGS_EXPERT_INGESTION__PDF_MAX_TABLE_CROSSINGS="100",
    )
    started = time.monotonic()
    done = run_cli(["ingest", str(folder), "-q"], env, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr.splitlines() == [
        f"WARNING skipping {folder / 'bomb.docx'}: inflates to 17 MiB, over the limit of 8 MiB "
        "(setting ingestion.max_unzipped_mb, RAGS_EXPERT_INGESTION__MAX_UNZIPPED_MB)",
        f"WARNING {folder / 'grid.pdf'}: page 1's ruled lines cross 900 times, over the limit of 100 "
        "(setting ingestion.pdf_max_table_crossings, RAGS_EXPERT_INGESTION__PDF_MAX_TABLE_CROSSINGS): "
        "its tables read as plain text",
    ]
    assert done.stdout.startswith("3 files, ") and "1 skipped" in done.stdout, done.stdout
    assert took < 60, f"ingest took {took:.0f} s"  # the Hugo line alone took minutes before
