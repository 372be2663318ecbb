"""Chunking: Markdown structure (headings, code blocks), sizes, newlines; ids and migration through ingest."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest
from helpers.knowledge_base import make_settings
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rags_expert.retrieval import chunking
from rags_expert.retrieval.chunking import CHUNKER_VERSION, chunk_text, chunking_label, markdown_title
from rags_expert.retrieval.ingest import ChunkRecord, Ingestor, chunk_id, file_records
from rags_expert.retrieval.loaders import iter_files
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client

FENCED = """# Setup

Install the tool first.

```bash
# install it
pip install tool
```

~~~python
# a comment, not a heading
```
still code after a backtick line
~~~

````md
```
# inner
```
````

## Usage

Run it.
"""


def _sections(chunks) -> list[str]:
    return [c.section for c in chunks]


def test_comment_lines_in_fences_are_code_not_headings():
    chunks = chunk_text(FENCED, 1200, 200)
    assert _sections(chunks) == ["Setup", "Setup > Usage"]
    setup = chunks[0].text
    for block in (
        "```bash\n# install it\npip install tool\n```",
        "~~~python\n# a comment, not a heading\n```\nstill code after a backtick line\n~~~",
        "````md\n```\n# inner\n```\n````",
    ):
        assert block in setup
    assert chunks[1].text == "Run it."


def test_fenced_blocks_stay_whole_at_small_sizes():
    for size in (100, 120, 150, 200):
        chunks = chunk_text(FENCED, size, 30)
        assert all(len(c.text) <= size for c in chunks)
        texts = [c.text for c in chunks]
        assert any(
            "~~~python\n# a comment, not a heading\n```\nstill code after a backtick line\n~~~" in t for t in texts
        ), size
        assert any("```bash\n# install it\npip install tool\n```" in t for t in texts), size
        assert {c.section for c in chunks if "# a comment" in c.text} == {"Setup"}


def test_newlines_and_nested_list_indentation_are_kept():
    text = (
        "# Notes\n\nFirst line\nsecond line of the same paragraph.\n\n"
        "- top\n  - nested\n    - deeper\n      continued\n- next\n\n1. one\n   1. one.one\n"
    )
    (chunk,) = chunk_text(text, 1200, 200)
    assert chunk.text == text[len("# Notes\n\n") :].rstrip()


def test_heading_paths_setext_and_quoted_headings():
    text = (
        "Guide\n=====\n\nIntro.\n\n## Install ##\n\nSteps.\n\n### Linux\n\napt.\n\n"
        "> # quoted, not a section\n\n## Use\n\n    # indented code, not a heading\n"
    )
    chunks = chunk_text(text, 1200, 200)
    assert [(c.section, c.text) for c in chunks] == [
        ("Guide", "Intro."),
        ("Guide > Install", "Steps."),
        ("Guide > Install > Linux", "apt.\n\n> # quoted, not a section"),
        ("Guide > Use", "    # indented code, not a heading"),
    ]


def test_front_matter_is_not_a_heading():
    text = "---\ntitle: Notes\n# yaml comment\n---\n# Real\n\nBody.\n"
    chunks = chunk_text(text, 1200, 200)
    assert [(c.section, c.text) for c in chunks] == [("", "---\ntitle: Notes\n# yaml comment\n---"), ("Real", "Body.")]


def test_html_blocks_keep_only_their_visible_text():
    """A badge row and a centred logo are markup; the tagline inside a ``<p>`` and the words of a ``<details>`` are
    text; inline HTML inside a paragraph and HTML in a code block are left as written."""
    badges = "\n".join(f'<a href="https://ci.example/{i}"><img src="b{i}.svg" alt="badge {i}"></a>' for i in range(20))
    text = (
        f'<p align="center">\n<img src="logo.svg"/>\n</p>\n<p align="center">\n<em>A tiny &amp; fast tool.</em>\n</p>\n'
        f"<p>\n{badges}\n</p>\n\n<!-- generated: do not edit -->\n\n"
        "# Intro\n\nTool is a <b>small</b> library.\n\n<details>\n<summary>Why?</summary>\nBecause.\n</details>\n\n"
        '```html\n<p align="center">kept</p>\n```\n'
    )
    chunks = chunk_text(text, 300, 50)
    assert [(c.section, c.text) for c in chunks] == [
        ("", "A tiny & fast tool."),
        ("Intro", 'Tool is a <b>small</b> library.\n\nWhy?\nBecause.\n\n```html\n<p align="center">kept</p>\n```'),
    ]


def test_large_code_block_is_cut_into_valid_fences():
    lines = [f"    value_{i} = compute({i})  # step {i}" for i in range(60)]
    text = "# Code\n\nBefore.\n\n  ```python\n" + "\n".join(lines) + "\n  ```\n\nAfter.\n"
    chunks = chunk_text(text, 300, 50)
    parts = [c.text for c in chunks if "value_" in c.text]
    assert len(parts) > 3 and all(len(c.text) <= 300 for c in chunks)
    for part in parts:
        assert part.startswith("  ```python\n") and part.endswith("\n  ```")
    body = [ln for part in parts for ln in part.split("\n")[1:-1]]
    assert body == lines  # every line once, in order, indentation intact
    assert {c.section for c in chunks} == {"Code"}


def test_unterminated_fence_keeps_its_text():
    chunks = chunk_text("# A\n\n```\n# not a heading\nx = 1\n", 1200, 200)
    assert [(c.section, c.text) for c in chunks] == [("A", "```\n# not a heading\nx = 1")]


def test_long_prose_splits_at_sentences_with_overlap():
    text = " ".join(f"Sentence {i} says something." for i in range(60))
    chunks = chunk_text(text, 200, 60)
    assert len(chunks) > 5 and all(len(c.text) <= 200 for c in chunks)
    assert all(re.fullmatch(r"Sentence \d+ says something\.( Sentence \d+ says something\.)*", c.text) for c in chunks)
    firsts = [c.text.split(" says")[0] for c in chunks[1:]]
    assert all(f in prev.text for f, prev in zip(firsts, chunks))  # each chunk starts inside the previous one


def test_plain_text_has_no_markdown_sections():
    chunks = chunk_text("# not a heading in a .txt file\nplain words", 1200, 200, markdown=False)
    assert [(c.section, c.text) for c in chunks] == [("", "# not a heading in a .txt file\nplain words")]


def test_overlap_must_be_smaller_than_size():
    try:
        chunk_text("x", 100, 100)
    except ValueError as exc:
        assert "must be smaller" in str(exc)
    else:
        raise AssertionError("no error")


_WORD = st.sampled_from(["alpha", "beta.", "gamma!", "delta", "# hash", "*", "---", "x" * 30])
_PARA = st.lists(_WORD, min_size=1, max_size=40).map(" ".join)
_CODE = st.lists(st.sampled_from(["# comment", "x = 1", "    indented()", "", "## also code"]), max_size=12)
_FENCE = st.tuples(st.sampled_from(["```", "~~~"]), _CODE).map(lambda t: "\n".join([t[0] + "py", *t[1], t[0]]))
_BLOCK = st.one_of(_PARA, _FENCE, st.sampled_from(["# Top", "## Sub", "### Deep"]))


@hsettings(max_examples=80, deadline=None)
@given(blocks=st.lists(_BLOCK, min_size=1, max_size=15), size=st.integers(100, 400), frac=st.floats(0, 0.5))
def test_property_fences_whole_sizes_bounded_comments_never_sections(blocks, size, frac):
    text = "\n\n".join(blocks)
    chunks = chunk_text(text, size, int(size * frac))
    assert chunks == chunk_text(text, size, int(size * frac))  # deterministic
    assert all(0 < len(c.text) <= size for c in chunks)
    assert all("comment" not in c.section and "code" not in c.section for c in chunks)
    for fence in (b for b in blocks if b[:3] in ("```", "~~~") and len(b) <= size - 2):
        assert any(fence in c.text for c in chunks)
    for c in chunks:  # every chunk holds whole fences only: its fence lines pair up
        assert len(re.findall(r"^(?:```|~~~)", c.text, re.MULTILINE)) % 2 == 0, c.text


_LINE = st.sampled_from(
    ["# Top", "## Sub {#a}", "Setext", "=====", "---", "```py", "```", "~~~", "    code", "- item", "  - nested",
     "1. one", "2. two", "> quote", "> # quoted", "", "", "Text line.", "<div>", "</div>", "<!-- c", "-->", "***",
     "   # three", "- ```", "  code in an item", "  ```", "Para *em* `x`."]
)  # fmt: skip


@hsettings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=60), window=st.integers(1, 9))
def test_property_parsing_in_windows_finds_what_one_parse_finds(lines, window):
    """Sections, code blocks and titles do not depend on how many lines are parsed at a time (chunking.WINDOW_LINES)."""
    text = "\n".join(lines)
    whole = (chunk_text(text, 120, 30), markdown_title(text))
    chunking.WINDOW_LINES, default = window, chunking.WINDOW_LINES
    try:
        assert (chunk_text(text, 120, 30), markdown_title(text)) == whole
    finally:
        chunking.WINDOW_LINES = default


@pytest.mark.parametrize("overlap", [0, 30, 99])
def test_a_text_no_separator_splits_is_cut_into_the_windows_langchain_makes(overlap):
    """The direct cut (chunking._Splitter) gives LangChain's own chunks, without a list of single characters."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    langchain = RecursiveCharacterTextSplitter(separators=[""], chunk_size=100, chunk_overlap=overlap)
    for n in [1, 99, 100, 101, 169, 170, 171, 172, 250, 1000, 1001]:
        text = "".join(chr(97 + i % 26) for i in range(n))
        assert [c.text for c in chunk_text(text, 100, overlap, markdown=False)] == langchain.split_text(text)


# --- through ingest -----------------------------------------------------------------------------------


def _ids(kb: KnowledgeBase) -> list[str]:
    return [pid for pid, _ in kb.scroll_payloads(["source"])]


def test_reingesting_yields_the_same_ids(kb, tmp_path):
    f = tmp_path / "guide.md"
    f.write_text(FENCED * 3)
    first = [r.id for r in file_records(f, f.read_bytes(), [], 300, 60)]
    assert first == [r.id for r in file_records(f, f.read_bytes(), [], 300, 60)] and len(set(first)) == len(first)
    Ingestor(kb).run([f])
    again = Ingestor(kb).run([f])
    assert again.chunks_embedded == 0 and again.chunks_deleted == 0 and again.rechunked == 0
    assert sorted(_ids(kb)) == sorted(first)


def test_changed_file_keeps_its_unchanged_chunks(kb, tmp_path):
    f = tmp_path / "long.md"
    paras = [" ".join(f"Paragraph {p} sentence {s}." for s in range(8)) for p in range(6)]
    f.write_text("# Long\n\n" + "\n\n".join(paras))
    Ingestor(kb).run([f])
    f.write_text("# Long\n\n" + "\n\n".join(paras[:-1] + ["The last paragraph changed."]))
    report = Ingestor(kb).run([f])
    new = [r.id for r in file_records(f, f.read_bytes(), [], 300, 60)]
    assert 0 < report.chunks_embedded < len(new)  # only the changed chunks were embedded again
    assert sorted(_ids(kb)) == sorted(new)  # ... and the unchanged ones were not deleted as stale


def _legacy_records(path, records: list[ChunkRecord]) -> list[ChunkRecord]:
    """What the v1 chunker stored: whitespace collapsed, no chunking label (texts equal to v2 keep their id)."""
    out = []
    for r in records:
        text = re.sub(r"\s+", " ", r.text)
        cid = (
            r.id if text == r.text else chunk_id(r.payload["source"], r.payload["unit"], r.payload["chunk_index"], text)
        )
        payload = {k: v for k, v in r.payload.items() if k != "chunking"}
        out.append(ChunkRecord(cid, text, {**payload, "content": text, "chunk_id": cid}))
    return out


@pytest.mark.slow
def test_cli_reingest_of_a_v1_knowledge_base_rechunks_once(settings, docs):
    (docs / "guide.md").write_text(FENCED)
    kb = KnowledgeBase(settings)
    kb.ensure_collection()
    files = list(iter_files([docs]))
    v2 = {r.id for f in files for r in file_records(f, f.read_bytes(), [], 300, 60)}
    legacy = [r for f in files for r in _legacy_records(f, file_records(f, f.read_bytes(), [], 300, 60))]
    Ingestor(kb).store(legacy)
    assert {r.id for r in legacy} != v2 and {r.id for r in legacy} & v2  # some ids change, some stay
    close_client(settings.store)  # the CLI runs in another process
    env = {
        **os.environ,
        "RAGS_EXPERT_DATA_DIR": str(settings.store.data_dir),
        "RAGS_EXPERT_EMBEDDINGS__PROVIDER": "wordllama",
        "RAGS_EXPERT_STORE__ENGINE": settings.store.engine,
        "RAGS_EXPERT_INGESTION__CHUNK_SIZE": "300",
        "RAGS_EXPERT_INGESTION__CHUNK_OVERLAP": "60",
    }
    cmd = [sys.executable, "-m", "rags_expert.cli", "ingest", str(docs), "--collection", "test", "-q"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    notice = (
        f"chunking changed (v1 → {CHUNKER_VERSION} size=300 overlap=60): 4 files re-chunked, their old chunks replaced"
    )
    lines = [ln for ln in first.stderr.splitlines() if "chunking" in ln]
    assert len(lines) == 1 and lines[0].startswith("WARNING") and lines[0].endswith(notice), first.stderr
    assert "Traceback" not in first.stderr
    kb = KnowledgeBase(settings)
    ids = _ids(kb)
    assert len(ids) == len(set(ids)) and set(ids) == v2  # v2 chunks only, each once
    assert {p["chunking"] for _, p in kb.scroll_payloads(["chunking"])} == {chunking_label(300, 60)}
    close_client(settings.store)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "chunking changed" not in second.stderr
    assert sorted(_ids(KnowledgeBase(settings))) == sorted(ids)


def test_chunk_size_change_replaces_chunks_and_says_so(settings, docs, caplog):
    (docs / "guide.md").write_text(FENCED * 4)
    Ingestor(KnowledgeBase(settings)).run([docs])
    close_client(settings.store)
    smaller = make_settings(settings.store.data_dir, engine=settings.store.engine, chunk_size=150, chunk_overlap=20)
    kb = KnowledgeBase(smaller)
    with caplog.at_level(logging.WARNING):
        report = Ingestor(kb).run([docs])
    assert report.rechunked == 4 and report.previous_chunkings == {chunking_label(300, 60)}
    assert f"chunking changed ({chunking_label(300, 60)} → {chunking_label(150, 20)}): 4 files" in caplog.text
    expected = {r.id for f in iter_files([docs]) for r in file_records(f, f.read_bytes(), [], 150, 20)}
    ids = _ids(kb)
    assert len(ids) == len(set(ids)) and set(ids) == expected


def test_attribute_lists_are_dropped_from_heading_paths():
    text = "# Library {#library}\n\n## Tab Length { #tab_length }\n\nTabs are four spaces.\n\n## Output {: .wide }\n\nHTML.\n"
    assert [c.section for c in chunk_text(text, 1200, 200)] == ["Library > Tab Length", "Library > Output"]
