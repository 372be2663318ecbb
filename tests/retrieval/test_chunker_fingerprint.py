"""A change to the loaders' or the chunker's text must bump ``CHUNKER_VERSION``.

Ingest re-chunks a stored file only when its content or its chunking label changes, and the label is the chunker's
version. A change to what a loader writes without a new version leaves every knowledge base ingested before it with
the old chunks for good (the key-value record lines of Word tables once shipped like that). This test reads sample
documents of every format (``chunker_samples/``, plus a Word and a PDF file built here) as ingestion does and
compares a digest of their chunk texts with the one recorded for the current version in
``chunker_fingerprint.json``. After a deliberate change: bump ``CHUNKER_VERSION``, say what changed in its docstring,
then record the new digest with ``python tests/retrieval/test_chunker_fingerprint.py --record``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from rags_expert.retrieval.chunking import CHUNKER_VERSION
from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders import iter_files

HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "chunker_samples"
RECORDED = HERE / "chunker_fingerprint.json"
SIZE, OVERLAP = 600, 120  # small chunks, so that splitting inside a section is covered too


def _word() -> bytes:
    """A Word guide: headings, a list, a captioned table with a header row, a parameter record without one."""
    import docx
    from helpers.word import add_table, saved

    document = docx.Document()
    document.add_heading("Configuration", level=1)
    document.add_paragraph("Restart the service after a configuration change.")
    document.add_paragraph("first item", style="List Bullet")
    document.add_paragraph("Table 1: Service limits", style="Caption")
    add_table(document, [("limit", "value"), ("uploads", "25 MB"), ("sessions", "8")], bold_header=True)
    fields = [
        ("Configuration Parameter", "QK_MAX_FILES"),
        ("Value", "Default: 16"),
        ("Description", "How many destination files the service keeps open at once, counted over every channel."),
        ("Limits", "Greater than zero and not greater than the number of file handles the system allows."),
    ]
    add_table(document, fields)
    return saved(document)


def fingerprint(tmp: Path) -> tuple[str, int]:
    """The sha256 of every sample's chunk texts and sections, in file order, and how many chunks there are."""
    from helpers.pdf import continued_table_pdf

    (tmp / "guide.docx").write_bytes(_word())
    (tmp / "settings.pdf").write_bytes(continued_table_pdf())
    paths = sorted(iter_files([SAMPLES]), key=lambda p: p.name) + [tmp / "guide.docx", tmp / "settings.pdf"]
    digest, count = hashlib.sha256(), 0
    for path in paths:
        for record in file_records(path, path.read_bytes(), [], SIZE, OVERLAP):
            payload = record.payload
            digest.update(json.dumps([path.name, payload["section"], payload["content"]]).encode())
            count += 1
    return digest.hexdigest(), count


def test_the_chunk_texts_of_the_samples_are_those_recorded_for_this_chunker_version(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    pytest.importorskip("docutils", reason="the rst extra: pip install 'rags-expert[rst]'")
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    recorded = json.loads(RECORDED.read_text())
    digest, count = fingerprint(tmp_path)
    assert count > 20, count  # the samples are read, not skipped
    record = f"python {Path(__file__).relative_to(HERE.parent.parent)} --record"
    if recorded["chunker_version"] != CHUNKER_VERSION:
        pytest.fail(
            f"CHUNKER_VERSION is {CHUNKER_VERSION}, the fingerprint was recorded for {recorded['chunker_version']}: "
            f"record it with `{record}`"
        )
    assert digest == recorded["sha256"], (
        f"the samples' chunk texts changed while CHUNKER_VERSION stayed {CHUNKER_VERSION}: knowledge bases ingested "
        f"before the change would keep their old chunks. Bump CHUNKER_VERSION (say why in its docstring), then "
        f"`{record}`"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/retrieval/test_chunker_fingerprint.py --record")
    import tempfile

    sys.path.insert(0, str(HERE.parent))  # helpers/, as pytest's rootdir conftest puts it
    with tempfile.TemporaryDirectory() as folder:
        digest, count = fingerprint(Path(folder))
    RECORDED.write_text(
        json.dumps({"chunker_version": CHUNKER_VERSION, "sha256": digest, "chunks": count}, indent=2) + "\n"
    )
    print(f"{RECORDED.name}: {CHUNKER_VERSION}, {count} chunks, sha256 {digest[:12]}…")
