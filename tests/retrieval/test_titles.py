"""Document titles: front matter ``title:``, else the first heading outside code, else the file name.

Real library docs open with front matter or a fenced shell block (``# install the package``) before the first
heading; a title (and a chunk's section) is never taken from a comment in code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli_run import cli_env, run_cli

from rags_expert.retrieval.chunking import chunk_text, markdown_title
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.loaders import load_file
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings

FENCED_FIRST = """```bash
# install the package
pip install foo
```

Configuring Foo
===============

Set `FOO_HOME` before the first run.

## Options

```python
# a comment, not a section
foo.configure(level=2)
```
"""

DOCS = {
    "getting-started.md": "---\ntitle: Getting started with Foo\nsidebar_position: 1\n---\n\n"
    "```bash\n# install the package\npip install foo\n```\n\n# Installation\n\nFoo needs Python 3.11.\n",
    "configure.md": FENCED_FIRST,
    "reference.md": "---\ndescription: every call\n---\n~~~sh\n# run the tests\n~~~\n\n"
    "    # an indented code comment\n\n## The `foo` API {#api}\n\nCall `foo.run()` to start.\n",
    "release_notes.md": "Foo 2.0 drops Python 3.10.\n\n```bash\n# upgrade\npip install -U foo\n```\n",
}


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From the front matter\n---\n# A heading\n", "From the front matter"),
        ("---\ntitle: 'Quoted: with a colon'\n---\n", "Quoted: with a colon"),
        ("---\ndescription: no title here\n---\n```bash\n# install\n```\n# Real\n", "Real"),
        ("---\ntitle: [not yaml\n---\n# Heading after bad YAML\n", "Heading after bad YAML"),
        (FENCED_FIRST, "Configuring Foo"),
        ("~~~\n# tilde fence\n~~~\nSetext two\n----------\n", "Setext two"),
        ("    # indented code\n\n### Third level ###\n", "Third level"),
        ("> # quoted\n\n- # in a list\n\n# Top level\n", "Top level"),
        ("# `httpx.Client` and [links](https://x.org) {#client}\n", "httpx.Client and links"),
        ("Just text.\n\n```\n# comment\n```\n", ""),
        ("", ""),
    ],
    ids=[
        "front-matter",
        "front-matter-quoted",
        "front-matter-without-title",
        "front-matter-invalid",
        "fenced-comment-then-setext",
        "tilde-fence",
        "indented-code",
        "quote-and-list",
        "inline-markup",
        "no-heading",
        "empty",
    ],
)
def test_markdown_title(text, title):
    assert markdown_title(text) == title


def test_a_file_without_a_heading_is_titled_by_its_name(tmp_path):
    path = tmp_path / "release_notes.md"
    path.write_text(DOCS["release_notes.md"])
    assert [u.title for u in load_file(path)] == ["release_notes"]


def test_html_title_is_the_title_element_else_the_first_heading_element(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><body><pre>\n# not a title\n</pre><h2>Real <code>heading</code></h2><h1>Later</h1></body>")
    assert load_file(page)[0].title == "Real heading"
    page.write_text("<html><head><title> The  page </title></head><body><h1>Heading</h1></body></html>")
    assert load_file(page)[0].title == "The page"


@pytest.mark.parametrize(
    ("name", "sections"),
    [
        ("getting-started.md", {"", "Installation"}),
        ("configure.md", {"", "Configuring Foo", "Configuring Foo > Options"}),
        ("reference.md", {"", "The `foo` API"}),  # the attribute list is no part of the section
        ("release_notes.md", {""}),
    ],
)
def test_sections_never_come_from_code_comments(name, sections):
    chunks = chunk_text(DOCS[name], size=200, overlap=0)
    assert {c.section for c in chunks} == sections
    assert any("\n# " in f"\n{c.text}" for c in chunks)  # the commented code is kept, as code


@pytest.fixture
def library_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    return docs


@pytest.mark.slow
def test_ingest_and_search_through_the_cli_list_real_titles(tmp_path, library_docs):
    env = cli_env(tmp_path / "data")
    done = run_cli(["ingest", str(library_docs), "-q"], env)
    assert done.returncode == 0, done.stderr
    found = run_cli(["search", "install the package pip foo", "-k", "20", "--json"], env)
    assert found.returncode == 0, found.stderr
    titles = {Path(hit["source"]).name: hit["title"] for hit in json.loads(found.stdout)}
    assert titles == {
        "getting-started.md": "Getting started with Foo",
        "configure.md": "Configuring Foo",
        "reference.md": "The foo API",
        "release_notes.md": "release_notes",
    }


def test_ingesting_again_fixes_the_titles_of_stored_chunks(tmp_path, library_docs):
    """Chunks stored under a wrong title (the old rule) get the right one when the files are ingested again."""
    settings = KnowledgeBaseSettings(
        store={"data_dir": tmp_path / "data", "collection": "titles"}, embeddings={"provider": "wordllama"}
    )
    kb = KnowledgeBase(settings)
    try:
        Ingestor(kb).run([library_docs])
        ids = [pid for pid, _ in kb.scroll_payloads(["title"])]
        kb.set_payload(ids, {"title": "install the package"})
        report = Ingestor(kb).run([library_docs])
        titles = {p["title"] for _, p in kb.scroll_payloads(["title"])}
    finally:
        close_client(settings.store)
    assert report.chunks_embedded == 0 and report.unchanged == len(DOCS)  # nothing embedded again
    assert titles == {"Getting started with Foo", "Configuring Foo", "The foo API", "release_notes"}
