"""The loaders' bounds on what one file may cost (issue 53): a .docx whose zip directory declares more than
``ingestion.max_unzipped_mb`` is refused before anything is inflated, a PDF page whose ruled lines cross more than
``ingestion.pdf_max_table_crossings`` times keeps its plain text with one warning; each names its setting."""

from __future__ import annotations

import logging
import resource
import time

import pytest

from rags_expert.limits import setting_hint
from rags_expert.retrieval.loaders import LoadOptions, OverLimitError, load_file


def test_a_docx_bomb_is_refused_from_its_zip_directory_before_it_is_inflated(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    from helpers.word import bomb

    path = tmp_path / "bomb.docx"
    path.write_bytes(bomb("Never read.", inflated_mb=256))  # 256 MiB in a 0.3 MB file
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()  # CPU seconds: a busy machine does not count
    with pytest.raises(OverLimitError) as raised:
        load_file(path, options=LoadOptions(max_unzipped_mb=100))
    assert time.process_time() - started < 1.0  # inflating 256 MiB takes seconds
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: nothing inflated
    assert str(raised.value) == (
        f"{path}: inflates to 257 MiB, over the limit of 100 MiB "
        "(setting ingestion.max_unzipped_mb, RAGS_EXPERT_INGESTION__MAX_UNZIPPED_MB)"
    )


def test_a_docx_under_the_bound_is_read(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    from helpers.word import bomb

    path = tmp_path / "media.docx"
    path.write_bytes(bomb("Read in full.", inflated_mb=4))
    (unit,) = load_file(path, options=LoadOptions(max_unzipped_mb=8))
    assert unit.text == "Read in full."


def test_a_graph_paper_pdf_page_is_read_as_plain_text_with_one_warning(tmp_path, caplog):
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    from helpers.pdf import graph_paper_pdf

    path = tmp_path / "grid.pdf"
    path.write_bytes(graph_paper_pdf(120))  # 6.5 KB; pdfplumber's table finder: about 10 s
    started = time.process_time()  # CPU seconds: a busy machine does not count
    with caplog.at_level(logging.WARNING):
        units = load_file(path)  # the default bound
    assert time.process_time() - started < 3.0
    assert [u.text for u in units] == ["Graph paper."]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: page 1's ruled lines cross 14,400 times, over the limit of 5,000 "
        f"({setting_hint('ingestion.pdf_max_table_crossings')}): its tables read as plain text"
    ]


def test_a_ruled_table_under_the_bound_is_still_read_as_a_table(tmp_path, caplog):
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    from helpers.pdf import ruled_table_pdf

    path = tmp_path / "table.pdf"
    path.write_bytes(ruled_table_pdf())
    with caplog.at_level(logging.WARNING):
        units = load_file(path, options=LoadOptions(pdf_max_table_crossings=12))  # 3 by 4 lines: 12 crossings
    assert not caplog.records
    assert any(u.key == "p1t1" for u in units)
    with caplog.at_level(logging.WARNING):
        units = load_file(path, options=LoadOptions(pdf_max_table_crossings=11))
    assert not any(u.key == "p1t1" for u in units) and len(caplog.records) == 1
