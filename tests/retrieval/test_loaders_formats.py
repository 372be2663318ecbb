"""One test file per format, of our own, read as ingestion reads it (the chunks it stores): reStructuredText,
Word, notebooks, CSV/TSV, HTML and PDF tables. Tables become one line per row with the column names."""

from __future__ import annotations

import codecs
import csv
import json
import re
from pathlib import Path

import pytest
from helpers.extras import needs
from helpers.word import add_table, saved

from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders import LoadOptions, UnreadableFileError, load_file

needs_rst = needs("rst")

RST = """\
=========
 Fetcher
=========

Fetch pages with :func:`fetcher.get` or :class:`~fetcher.session.Session`; see :ref:`the tuning guide <tuning>`
and |project|.

.. |project| replace:: Fetcher

.. note:: Connections are reused.

.. versionadded:: 2.1
   The ``retries`` argument.

.. function:: get(url, timeout=15, retries=0)

   Fetch one page.

   :param url: the page's address
   :param timeout: seconds to wait for the server
   :returns: the page's text

.. code-block:: python

   fetcher.get("https://example.com", timeout=3)

.. toctree::
   :maxdepth: 2

   install
   api

.. include:: /etc/hostname

.. _tuning:

Tuning
======

.. list-table:: Limits
   :header-rows: 1

   * - setting
     - default
   * - pool_size
     - 10
   * - max_redirects
     - 30

=========  =======
option     default
=========  =======
verify     True
=========  =======

.. deprecated:: 3.0
   Use ``pool_size`` instead of ``max_pool``.

.. unknownthing:: some argument

   Its body text.

Literal::

    .. not a directive: code
"""


def chunks(tmp_path: Path, name: str, data: bytes | str, size: int = 1200) -> list[dict]:
    """The payloads of the chunks ingestion stores for a file ``name`` holding ``data``."""
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return [r.payload for r in file_records(path, path.read_bytes(), [], size, 200)]


@needs_rst
def test_rst_sections_roles_directives_field_lists_and_tables(tmp_path):
    found = chunks(tmp_path, "fetcher.rst", RST)
    text = "\n".join(c["content"] for c in found)
    assert found[0]["title"] == "Fetcher"
    assert {c["section"] for c in found} == {
        "Fetcher",
        "Fetcher > get",
        "Fetcher > Tuning",
        "Fetcher > Tuning > Limits",
    }
    for shown in (
        "Fetch pages with `fetcher.get` or `Session`; see the tuning guide\nand Fetcher.",
        "Note:\n\nConnections are reused.",
        "New in version 2.1: The `retries` argument.",
        "`get(url, timeout=15, retries=0)`\n\nFetch one page.",
        "param url: the page's address\n\nparam timeout: seconds to wait for the server\n\nreturns: the page's text",
        '```python\nfetcher.get("https://example.com", timeout=3)\n```',
        "setting: pool_size; default: 10\n\nsetting: max_redirects; default: 30",
        "option: verify; default: True",
        "Deprecated since version 3.0: Use `pool_size` instead of `max_pool`.",
        "some argument\n\nIts body text.",
        "```\n.. not a directive: code\n```",
    ):
        assert shown in text, shown
    outside_code = re.sub(r"(?ms)^```.*?^```$", "", text)
    assert not re.search(r"^\.\. |:\w+:`|\|project\||maxdepth|toctree", outside_code, re.M), outside_code
    assert "install\napi" not in text


SETTINGS_RST = """\
Configuration
=============

Values are read from the ``QUOKKA_`` environment.

.. py:data:: MAX_BODY
   :type: int
   :value: 65536

   The largest request body accepted, in bytes.

.. py:data:: DEBUG

   Whether debug pages are shown.

   Default: ``False``

.. confval:: pool_timeout
   :type: float
   :default: ``2.5``

   Seconds to wait for a free connection.

.. py:class:: Server(host, port=8080)

   A server.

   .. py:method:: close(grace=10)

      Stops accepting connections.

   Servers close on exit.

Workers read these values once.

- A list item:

  .. py:function:: helper(x)

     Helps.
"""


@needs_rst
def test_rst_object_descriptions_are_headings_with_their_lines_under_the_name(tmp_path):
    found: dict[str, str] = {}  # each section's chunks, without the heading line a chunk starts with
    for chunk in chunks(tmp_path, "settings.rst", SETTINGS_RST):
        text = chunk["content"].removeprefix(chunk["section"] + "\n")
        found[chunk["section"]] = f"{found[chunk['section']]}\n\n{text}" if chunk["section"] in found else text
    assert found["Configuration > DEBUG"] == "Whether debug pages are shown.\n\nDefault: `False`"
    assert found["Configuration > MAX_BODY"] == (
        "Type: int\n\nValue: 65536\n\nThe largest request body accepted, in bytes."
    )
    assert found["Configuration > pool_timeout"].startswith("Type: float\n\nDefault: `2.5`\n\nSeconds to wait")
    assert found["Configuration > Server"].startswith("`Server(host, port=8080)`\n\nA server.")
    assert found["Configuration > Server > close"].startswith("`close(grace=10)`\n\nStops accepting")
    assert "Servers close on exit." in found["Configuration > Server"]  # the class's own text after its method
    assert found["Configuration"].startswith("Values are read")
    assert "Workers read these values once." in found["Configuration"]  # the section's text after the objects
    assert "`helper(x)`" in found["Configuration"]  # inside a list item: no heading
    assert not any(":type:" in text or ":value:" in text for text in found.values())


@needs_rst
def test_rst_include_never_reads_another_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    found = chunks(
        tmp_path, "inc.rst", f"Title\n=====\n\n.. include:: {secret}\n\n.. literalinclude:: {secret}\n\nText.\n"
    )
    assert "TOP-SECRET-VALUE" not in "\n".join(c["content"] for c in found)


@needs_rst
def test_rst_and_myst_version_directives_share_sphinx_wording(tmp_path):
    rst = "Title\n=====\n\n.. versionadded:: 1.5\n\n.. deprecated:: 2.0 Use ``spin`` instead.\n"
    myst = "# Title\n\n```{versionadded} 1.5\n```\n\n:::{deprecated} 2.0 Use `spin` instead.\n:::\n"
    for name, page in (("changes.rst", rst), ("changes.md", myst)):
        text = "\n".join(c["content"] for c in chunks(tmp_path, name, page))
        assert "New in version 1.5." in text and "Deprecated since version 2.0: Use `spin` instead." in text, text


@needs_rst
@pytest.mark.parametrize("added, deprecated", [("version-added", "version-deprecated"), ("versionadded", "deprecated")])
def test_sphinx_7_3_version_directive_names_read_as_the_old_ones(tmp_path, added, deprecated):
    """Sphinx 7.3 named the version directives ``version-added``, ``version-changed``, ``version-deprecated`` and
    ``version-removed`` (coverage.py's configuration reference writes them so): a setting's "added in" version keeps
    its label, in reStructuredText and in MyST, whichever name the page uses."""
    rst = (
        "Settings\n========\n\n[run] patch\n-----------\n\n(list of strings) Patch these places.\n\n"
        f".. {added}:: 7.10\n\n.. version-changed:: 7.11 Now also ``subprocess``.\n\n"
        f".. {deprecated}:: 8.0\n\n.. version-removed:: 9.0\n"
    )
    myst = f"# Settings\n\n## patch\n\nPatch these places.\n\n```{{{added}}} 7.10\n```\n"
    text = "\n".join(c["content"] for c in chunks(tmp_path, "config.rst", rst))
    assert "New in version 7.10." in text and "Changed in version 7.11: Now also `subprocess`." in text, text
    assert "Deprecated since version 8.0." in text and "Removed in version 9.0." in text, text
    assert "New in version 7.10." in "\n".join(c["content"] for c in chunks(tmp_path, "config.md", myst))


@needs_rst
def test_sphinx_tabs_code_tabs_are_code_blocks(tmp_path):
    """sphinx-tabs' ``.. code-tab:: ini`` is a code block in a tab: its lines stay code as written (a Windows path's
    backslashes, a ``[section]`` header), fenced with the tab's language."""
    page = (
        "Config\n======\n\n.. tabs::\n\n    .. code-tab:: ini\n        :caption: .coveragerc\n\n"
        "        [run]\n        source = c:\\myproj\\src\n\n"
        "    .. code-tab:: toml TOML file\n\n        [tool.coverage.run]\n        branch = true\n"
    )
    text = "\n".join(c["content"] for c in chunks(tmp_path, "config.rst", page))
    assert "```ini\n[run]\nsource = c:\\myproj\\src\n```" in text, text
    assert "```toml\n[tool.coverage.run]\nbranch = true\n```" in text, text


def _docx() -> bytes:
    """A Word document with a title, headings, a list, a caption and a table with a merged cell."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Operations manual"
    document.add_heading("Operations", level=1)
    document.add_paragraph("Restart the service after a configuration change.")
    document.add_heading("Limits", level=2)
    document.add_paragraph("first item", style="List Bullet")
    document.add_paragraph("second item", style="List Number")
    document.add_paragraph("Table 1: Service limits", style="Caption")
    table = add_table(document, [("limit", "value", "unit"), ("uploads", "25", "MB"), ("sessions", "8", "")])
    table.cell(2, 1).merge(table.cell(2, 2))
    document.add_paragraph("After the table.")
    return saved(document)


def test_docx_headings_lists_and_a_table_under_its_caption(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    found = chunks(tmp_path, "manual.docx", _docx())
    assert found[0]["title"] == "Operations manual"
    by_section: dict[str, str] = {}
    for c in found:
        by_section[c["section"]] = by_section.get(c["section"], "") + c["content"]
    assert set(by_section) == {"Operations", "Operations > Limits", "Operations > Limits > Table 1: Service limits"}
    assert by_section["Operations > Limits"].endswith("After the table.")  # the section again after the table
    assert "Restart the service after a configuration change." in by_section["Operations"]
    assert "- first item\n- second item" in by_section["Operations > Limits"]
    table = by_section["Operations > Limits > Table 1: Service limits"].split("\n")
    assert table[1:] == ["limit: uploads; value: 25; unit: MB", "", "limit: sessions; value: 8"]


def test_a_broken_docx_is_one_unreadable_file(tmp_path):
    pytest.importorskip("docx", reason="the docx extra")
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(UnreadableFileError, match=r"broken\.docx: unreadable Word \(\w+\)$"):
        load_file(path)


def _notebook(output: str) -> str:
    """A notebook with a Markdown cell (an admonition in it), a code cell with outputs, and a raw cell."""
    return json.dumps(
        {
            "metadata": {"kernelspec": {"language": "python"}, "language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
            "cells": [
                {
                    "cell_type": "markdown",
                    "metadata": {},
                    "source": ["# Loading data\n", "\n", '!!! note "CSV"\n', "    Files are read lazily.\n"],
                },
                {
                    "cell_type": "code",
                    "metadata": {},
                    "execution_count": 1,
                    "source": "rows = load('a.csv')\nlen(rows)",
                    "outputs": [
                        {"output_type": "stream", "name": "stdout", "text": [output]},
                        {
                            "output_type": "execute_result",
                            "execution_count": 1,
                            "metadata": {},
                            "data": {"text/plain": ["42"], "image/png": "iVBORw0KGgo="},
                        },
                    ],
                },
                {"cell_type": "markdown", "metadata": {}, "source": "## Next\nFilter the rows."},
            ],
        }
    )


def test_notebook_markdown_cells_code_cells_and_capped_text_outputs(tmp_path):
    found = chunks(tmp_path, "load.ipynb", _notebook("loaded\n"))
    text = "\n".join(c["content"] for c in found)
    assert found[0]["title"] == "Loading data"
    assert "CSV\n\nFiles are read lazily." in text and "!!!" not in text
    assert "```python\nrows = load('a.csv')\nlen(rows)\n```" in text
    assert "Output:\n\n```text\nloaded\n42\n```" in text
    assert "iVBOR" not in text  # images are not text
    assert [c["section"] for c in found][-1] == "Loading data > Next"

    path = tmp_path / "long.ipynb"
    path.write_text(_notebook("x" * 5000))
    (unit,) = load_file(path, options=LoadOptions(notebook_output_chars=100))
    output = re.search(r"```text\n(.*?)\n```", unit.text, re.S)
    assert output and len(output.group(1)) == 100 and output.group(1).endswith("…")
    (unit,) = load_file(path, options=LoadOptions(notebook_output_chars=0))
    assert "Output:" not in unit.text


def test_a_file_named_ipynb_that_is_no_notebook_is_unreadable(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_text('{"cells": 3}')
    with pytest.raises(UnreadableFileError, match=r"x\.ipynb: not a notebook \(no list of cells, nor nbformat 3"):
        load_file(path)


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
                    "input": ["period = semi_major_axis ** 1.5"],
                    "language": "python",
                    "metadata": {},
                    "outputs": [
                        {"output_type": "pyout", "prompt_number": 1, "metadata": {}, "text": ["11.86"]},
                        {"output_type": "pyerr", "ename": "ValueError", "evalue": "negative axis", "traceback": []},
                    ],
                },
                {"cell_type": "heading", "level": 2, "metadata": {}, "source": "Moons"},
                {"cell_type": "markdown", "metadata": {}, "source": "Io is the innermost."},
            ],
        }
    ],
}


def test_an_nbformat_3_notebook_reads_its_worksheets_cells(tmp_path):
    """IPython 1-2 wrote cells under ``worksheets``, a code cell's text in ``input``, headings as cells of their own."""
    found = chunks(tmp_path, "orbits.ipynb", json.dumps(NOTEBOOK_V3))
    assert found[0]["title"] == "Orbital periods"
    assert [c["section"] for c in found] == ["Orbital periods", "Orbital periods > Moons"]
    text = "\n".join(c["content"] for c in found)
    assert "```python\nperiod = semi_major_axis ** 1.5\n```" in text
    assert "Output:\n\n```text\n11.86\nValueError: negative axis\n```" in text
    assert "Io is the innermost." in text


def test_csv_and_tsv_rows_carry_their_header_and_the_file_name_is_their_section(tmp_path):
    found = chunks(tmp_path, "limits.csv", 'option,default,note\ntimeout,15,"seconds, per request"\nretries,3,\n')
    assert [(c["section"], c["content"]) for c in found] == [
        ("limits", "limits\noption: timeout; default: 15; note: seconds, per request\n\noption: retries; default: 3")
    ]
    (tsv,) = chunks(tmp_path, "codes.tsv", "code\tmeaning\n404\tnot found\n")
    assert tsv["content"] == "codes\ncode: 404; meaning: not found"


def test_a_csv_cell_longer_than_the_csv_modules_limit_is_read(tmp_path):
    """The csv module refuses a field over 131,072 characters by default: a valid file was skipped as malformed."""
    essay = "marmalade " * 20_000
    found = chunks(tmp_path, "essays.csv", f'title,text\nLong essay,"{essay}"\n', size=20_000)
    assert "".join(c["content"] for c in found).count("marmalade") >= 20_000
    assert csv.field_size_limit() == 131_072  # the limit is the module's own again after reading


BOMS = {
    "utf-16-le": codecs.BOM_UTF16_LE,
    "utf-16-be": codecs.BOM_UTF16_BE,
    "utf-32-le": codecs.BOM_UTF32_LE,
    "utf-32-be": codecs.BOM_UTF32_BE,
}


@pytest.mark.parametrize("encoding", BOMS)
def test_utf16_and_utf32_text_with_a_bom_is_read_by_every_text_loader(tmp_path, encoding):
    """A spreadsheet's "Unicode text" export (UTF-16 with a BOM) was skipped as binary content."""
    (tsv,) = chunks(tmp_path, "codes.tsv", BOMS[encoding] + "code\tmeaning\n418\tthé\n".encode(encoding))
    assert tsv["content"] == "codes\ncode: 418; meaning: thé"
    (md,) = chunks(tmp_path, "note.md", BOMS[encoding] + "# Note\n\nCafé au lait.\n".encode(encoding))
    assert (md["title"], md["content"]) == ("Note", "Note\nCafé au lait.")


def test_bytes_after_a_utf16_bom_that_are_no_text_are_named(tmp_path):
    path = tmp_path / "odd.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + b"a\x00b")  # an odd byte count
    with pytest.raises(UnreadableFileError, match=r"odd\.txt: not UTF-16 text \(truncated data"):
        load_file(path)
    path.write_bytes(codecs.BOM_UTF16_LE + b"A\x00" + b"\x00\x00" * 8 + b"\x01\x02")  # NUL characters
    with pytest.raises(UnreadableFileError, match=r"odd\.txt: binary content"):
        load_file(path)


def test_html_tables_with_header_rows_and_captions(tmp_path):
    page = """<html><head><title>Server</title></head><body>
<h1>Server</h1><p>Intro.</p>
<h2>Options</h2>
<table><caption>Server options</caption>
<thead><tr><th>option</th><th>default</th></tr></thead>
<tbody><tr><td><code>port</code></td><td>8080</td></tr><tr><td>workers</td><td>4<br>per CPU</td></tr></tbody>
</table>
<p>After.</p>
<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>
</body></html>"""
    found = chunks(tmp_path, "server.html", page)
    by_section = {c["section"]: c["content"] for c in found}
    assert by_section["Server > Options > Server options"].split("\n")[1:] == [
        "option: port; default: 8080",
        "",
        "option: workers; default: 4 per CPU",
    ]
    assert by_section["Server > Options"].split("\n")[-3:] == ["After.", "", "a: 1; b: 2"]  # the section again


def test_pdf_table_rows_carry_their_header_and_the_caption_is_their_section(tmp_path):
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    from helpers.pdf import ruled_table_pdf

    found = chunks(tmp_path, "limits.pdf", ruled_table_pdf())
    tables = [c for c in found if c["unit"] == "p1t1"]
    assert [(c["section"], c["content"]) for c in tables] == [
        ("Table 2: Upload limits", "Table 2: Upload limits\nlimit: size; value: 25 MB\n\nlimit: files; value: 10")
    ]
    (page,) = [c for c in found if c["unit"] == "p1"]
    assert "Uploads are checked twice." in page["content"] and "25 MB" not in page["content"]


def test_a_pdf_table_continued_on_the_next_page_keeps_its_header_and_caption(tmp_path):
    pytest.importorskip("pdfplumber", reason="the pdf extra: pip install 'rags-expert[pdf]'")
    from helpers.pdf import continued_table_pdf

    found = chunks(tmp_path, "settings.pdf", continued_table_pdf())
    tables = {c["unit"]: (c["section"], c["content"]) for c in found if c["unit"] in ("p1t1", "p2t1")}
    assert tables == {
        "p1t1": (
            "Table 4: Settings",
            "Table 4: Settings\nsetting: size; default: 25\n\nsetting: limit; default: the upload cap in megabytes",
        ),
        "p2t1": ("Table 4: Settings", "Table 4: Settings\nsetting: depth; default: 4"),
    }
    (page,) = [c for c in found if c["unit"] == "p2"]
    assert "Depth is per worker." in page["content"] and "megabytes" not in page["content"]


def test_a_two_column_word_table_without_a_header_row_reads_label_value_rows_under_its_first(tmp_path):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    import docx

    document = docx.Document()
    document.add_heading("Commands", level=1)
    document.add_paragraph("Table 3: No-op command", style="Caption")
    # a record: its first column names each row, no header row
    add_table(document, [("Command Code", "0"), ("Command Name", "No-op"), ("Description", "Sends an event.")])
    document.add_paragraph("Table 4: Limits", style="Caption")
    add_table(document, [("Limit", "Value"), ("uploads", "25 MB")], bold_header=True)  # the same shape: a header
    by_section = {c["section"]: c["content"] for c in chunks(tmp_path, "guide.docx", saved(document))}
    assert by_section["Commands > Table 3: No-op command"].split("\n")[1:] == [  # short fields: one line
        "Command Code: 0; Command Name: No-op; Description: Sends an event."
    ]
    assert by_section["Commands > Table 4: Limits"].split("\n")[1:] == ["Limit: uploads; Value: 25 MB"]


def test_a_word_record_table_says_its_value_on_the_line_of_its_long_description(tmp_path):
    """A parameter's record (Parameter, Value, Purpose, Description, Limits rows, no header row): each long field is a
    line of its own after the record's name, its first row and short fields, so the line that says what the
    parameter does also says its value, wherever the value's row stood."""
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")
    import docx

    description = (
        "This parameter sets how many destination files a single packet may be written to at a time, and so the "
        "size of every entry of the packet filter table."
    )
    limits = "The number must be greater than zero and not greater than the number of destination files."
    document = docx.Document()
    document.add_heading("Configuration", level=1)
    fields = [
        ("Configuration Parameter", "QK_FILTERS_PER_PACKET"),
        ("Value", "Default: 4"),
        ("Purpose", "Filters per packet entry"),
        ("Description", description),
        ("Limits", limits),
        ("Units", "filters"),
    ]
    add_table(document, fields)
    (content,) = [c["content"] for c in chunks(tmp_path, "guide.docx", saved(document))]
    name = (
        "Configuration Parameter: QK_FILTERS_PER_PACKET; Value: Default: 4; Purpose: Filters per packet entry; "
        "Units: filters"
    )
    lines = [line for line in content.split("\n")[1:] if line]  # after the heading
    assert lines == [f"{name}; Description: {description}", f"{name}; Limits: {limits}"]


def test_an_html_table_whose_rows_start_with_a_th_reads_label_value_rows_under_its_first(tmp_path):
    page = """<html><body><h1>Server</h1>
<table><tr><th>Port</th><td>8080</td></tr><tr><th>Timeout</th><td>30 s</td><td>per request</td></tr></table>
</body></html>"""
    (content,) = [c["content"] for c in chunks(tmp_path, "server.html", page)]
    assert content.split("\n")[-1] == "Port: 8080; Timeout: 30 s; per request"


def test_a_long_key_value_table_is_a_list_of_rows_not_one_record(tmp_path):
    """Twelve `<th>` rows are a glossary, not one record: a row is not named by the other short rows."""
    terms = [(f"term{i}", f"meaning number {i}") for i in range(12)]
    rows = "".join(f"<tr><th>{t}</th><td>{m}</td></tr>" for t, m in terms)
    (content,) = [
        c["content"]
        for c in chunks(tmp_path, "glossary.html", f"<html><body><h1>Glossary</h1><table>{rows}</table></body></html>")
    ]
    lines = [line for line in content.split("\n")[1:] if line]
    assert lines == [f"term0: meaning number 0; {t}: {m}" for t, m in terms[1:]]


@needs_rst
def test_rst_inline_literals_holding_backticks_stay_one_code_span(tmp_path):
    text = "Roles\n=====\n\nWrite ``:func:`input``` to link a function; ``a`b`` is one name.\n"
    (chunk,) = chunks(tmp_path, "roles.rst", text)
    assert "Write `` :func:`input` `` to link a function; ``a`b`` is one name." in chunk["content"], chunk


SPHINX_MODULE_RST = """\
=====================================
 :mod:`quokka` --- Request routing
=====================================

.. moduleauthor:: Ada Example <ada@example.org>
.. sectionauthor:: Ada Example <ada@example.org>

The main entry points:

===================== ====================================
:class:`Router`       routes requests to handlers
:func:`route`         registers one handler
===================== ====================================

.. seealso:: :ref:`routing-guide`

=========== =========
Limit       Value
=========== =========
routes      512
=========== =========
"""


@needs_rst
def test_an_rst_table_without_a_header_row_is_a_list_of_named_rows(tmp_path):
    """A simple table with no ``===`` line under its first row names things (Sphinx module pages): each row reads
    "name: what it is", never under the first row as if that were a header; a table with one keeps its names. The
    page's title reduces its role as its heading does; the authors Sphinx hides are not text."""
    (chunk,) = chunks(tmp_path, "quokka.rst", SPHINX_MODULE_RST)
    assert chunk["title"] == chunk["section"] == "`quokka` --- Request routing"
    lines = [line for line in chunk["content"].split("\n") if line]
    assert lines[1:] == [
        "The main entry points:",
        "`Router`: routes requests to handlers",
        "`route`: registers one handler",
        "See also: routing-guide",
        "Limit: routes; Value: 512",
    ]
    assert "Ada" not in chunk["content"]
