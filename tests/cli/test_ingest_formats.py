"""``rags-expert ingest`` over the formats of issue 36, as a script sees it (subprocesses): a format whose extra
is missing is one line naming the ``pip install`` (never a silent skip, never a traceback), and an ingest of
1,000 mixed files shows its progress and ends with what it read per format."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from helpers.cli_run import ROOT, cli_env, run_cli
from helpers.extras import missing_extra, needs
from helpers.word import add_table, saved

RST = "Title {i}\n========\n\nThe value of setting number {i} is :code:`{i}`.\n"


def without(modules: list[str], root: Path) -> str:
    """A folder to put first on ``PYTHONPATH`` in which importing ``modules`` fails, as if not installed."""
    shadow = root / "shadow"
    for name in modules:
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(f"raise ModuleNotFoundError({f'No module named {name!r}'!r})\n")
    return f"{shadow}:{ROOT}"


@pytest.mark.slow
def test_files_whose_extra_is_missing_are_one_line_per_format_naming_the_pip_install(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "index.md").write_text("# Index\n\nThe index page.\n")
    for i in range(12):
        (folder / f"page{i:02d}.rst").write_text(RST.format(i=i))
    (folder / "a.docx").write_bytes(b"PK\x03\x04")  # never opened: the extra is missing
    (folder / "b.docx").write_bytes(b"PK\x03\x04")
    env = cli_env(tmp_path / "data")
    env["PYTHONPATH"] = without(["docutils", "docx"], tmp_path)
    done = run_cli(["ingest", str(folder), "-q"], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "WARNING skipped 2 .docx files: pip install 'rags-expert[docx]'",
        "WARNING skipped 12 .rst files: pip install 'rags-expert[rst]'",
    ]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1 files, 1 chunks (1 new, 0 removed, 0 files unchanged, 0 pruned, 14 skipped)")
    assert lines[1:] == [
        "  Markdown: 1 file, 1 chunk",
        "  Word: 0 files, 0 chunks, 2 skipped (2 need pip install 'rags-expert[docx]')",
        "  reStructuredText: 0 files, 0 chunks, 12 skipped (12 need pip install 'rags-expert[rst]')",
    ]

    only = run_cli(["ingest", str(folder / "page00.rst"), "-q"], env)  # nothing else: exit 1, still one line
    assert only.returncode == 1 and only.stdout == ""
    assert only.stderr.splitlines() == [
        "WARNING skipped 1 .rst file: pip install 'rags-expert[rst]'",
        f"nothing was ingested from {folder / 'page00.rst'}: 1 file(s) skipped (reasons above)",
    ]

    if reason := missing_extra("rst"):
        pytest.skip(f"the files are skipped without the extra; read with it: {reason}")
    env["PYTHONPATH"] = str(ROOT)  # installed: the same files are read
    again = run_cli(["ingest", str(folder / "page00.rst"), "-q"], env)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert again.stdout.splitlines()[1] == "  reStructuredText: 1 file, 1 chunk"


@pytest.mark.slow
@needs("rst")
def test_a_page_with_no_text_of_its_own_is_skipped_with_its_reason_and_counted_apart(tmp_path):
    """A Sphinx page that only includes another file (includes are never followed) and an empty Markdown page: one
    warning each saying why, and the per-format summary counts them as having no text, not as unreadable."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "changes.rst").write_text(".. include:: ../CHANGES.rst\n")
    (folder / "guide.rst").write_text(RST.format(i=1))
    (folder / "todo.md").write_text("\n   \n")
    (folder / "notes.md").write_text("# Notes\n\nThe cache lives in the data folder.\n")
    done = run_cli(["ingest", str(folder), "-q"], cli_env(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert sorted(done.stderr.splitlines()) == [
        f"WARNING skipping {folder / 'changes.rst'}: no text to index, only includes of other files (never followed)",
        f"WARNING skipping {folder / 'todo.md'}: empty file (whitespace only)",
    ]
    assert done.stdout.splitlines()[1:] == [
        "  Markdown: 1 file, 1 chunk, 1 skipped (1 with no text to index; reasons above)",
        "  reStructuredText: 1 file, 1 chunk, 1 skipped (1 with no text to index; reasons above)",
    ]


def _docx(i: int) -> bytes:
    """A small Word document with a heading and a two-row table."""
    import docx

    document = docx.Document()
    document.add_heading(f"Report {i}", level=1)
    add_table(document, [("metric", "value"), (f"latency {i}", f"{i} ms")])
    return saved(document)


def _notebook(i: int) -> str:
    """A notebook of a Markdown cell and a code cell."""
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": f"# Notebook {i}\nSteps for case {i}."},
        {"cell_type": "code", "metadata": {}, "source": f"print({i})", "outputs": [], "execution_count": None},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


MIXED = {
    ".md": lambda i: f"# Page {i}\n\n!!! note\n    Fact {i} of the docs.\n",
    ".rst": lambda i: RST.format(i=i),
    ".csv": lambda i: f"key,value\nkey{i},{i}\n",
    ".tsv": lambda i: f"key\tvalue\nk{i}\t{i}\n",
    ".ipynb": _notebook,
    ".html": lambda i: f"<h1>Doc {i}</h1><table><tr><th>a</th><th>b</th></tr><tr><td>{i}</td><td>x</td></tr></table>",
    ".txt": lambda i: f"Plain note number {i}.\n",
    ".jsonl": lambda i: json.dumps({"text": f"Record {i}."}) + "\n",
}


@pytest.mark.slow
def test_an_ingest_of_a_thousand_mixed_files_shows_progress_and_ends_with_the_per_format_summary(tmp_path):
    pytest.importorskip("docutils", reason="the rst extra")
    pytest.importorskip("docx", reason="the docx extra")
    folder = tmp_path / "docs"
    for i in range(1000):
        sub = folder / f"part{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        if i % 9 == 8:
            (sub / f"f{i:04d}.docx").write_bytes(_docx(i))
            continue
        suffix = list(MIXED)[i % 9]
        content = MIXED[suffix](i)
        (sub / f"f{i:04d}{suffix}").write_text(content)
    (folder / "broken.ipynb").write_text("{not json")
    done = run_cli(["ingest", str(folder)], cli_env(tmp_path / "data"), timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    progress = re.findall(r"ingest: (\d+)% \((\d+)/1001 files", done.stderr)
    assert [int(p) for p, _ in progress] == list(range(10, 101, 10)), done.stderr[-2000:]
    assert f"WARNING skipping {folder / 'broken.ipynb'}: invalid notebook JSON (" in done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1000 files, 1000 chunks (1000 new, 0 removed, 0 files unchanged, 0 pruned, 1 skipped)")
    assert lines[1:] == [
        "  CSV: 111 files, 111 chunks",
        "  HTML: 111 files, 111 chunks",
        "  JSONL: 111 files, 111 chunks",
        "  Markdown: 112 files, 112 chunks",
        "  TSV: 111 files, 111 chunks",
        "  Word: 111 files, 111 chunks",
        "  notebook: 111 files, 111 chunks, 1 skipped (1 unreadable; reasons above)",
        "  reStructuredText: 111 files, 111 chunks",
        "  text: 111 files, 111 chunks",
    ]


@pytest.mark.slow
def test_pdf_tables_without_the_pdf_extra_are_read_as_text_and_the_summary_says_how_to_get_them(tmp_path):
    from helpers.pdf import ruled_table_pdf

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "limits.pdf").write_bytes(ruled_table_pdf())
    env = cli_env(tmp_path / "data")
    env["PYTHONPATH"] = without(["pdfplumber"], tmp_path)
    done = run_cli(["ingest", str(folder), "-q"], env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[1:] == [
        "  PDF: 1 file, 1 chunk, tables read as plain text: pip install 'rags-expert[pdf]'"
    ]
    if importlib.util.find_spec("pdfplumber") is not None:  # with the extra: the page and its table, no remark
        env["PYTHONPATH"] = str(ROOT)
        again = run_cli(["ingest", str(folder), "-q"], env)
        assert again.returncode == 0 and again.stdout.splitlines()[1:] == ["  PDF: 1 file, 2 chunks"]
