"""Symbolic links in an ingested folder (issue 53): a link to a file outside the folder is not followed unless
``ingestion.follow_outside_links`` says so, a file is stored under its path in the folder (a link's own path), and
``--prune`` removes what an earlier ingest stored of an outside link, under either path."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from helpers.knowledge_base import make_settings

from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client

SECRET = "# Deploy keys\n\nThe production deploy key is zebra-lantern-42.\n"


def _sources(kb: KnowledgeBase) -> set[str]:
    return {p["source"] for _, p in kb.scroll_payloads(["source"])}


@pytest.fixture
def linked(docs: Path, tmp_path: Path) -> Path:
    """``docs`` with ``keys.md``, a link to a file outside it (``tmp_path/private/keys.md``); returns the target."""
    target = tmp_path / "private" / "keys.md"
    target.parent.mkdir()
    target.write_text(SECRET)
    (docs / "keys.md").symlink_to(target)
    return target


@pytest.fixture
def following(tmp_path: Path):
    """A knowledge base (Qdrant Edge) that follows links to files outside the folder."""
    s = make_settings(tmp_path / "data", engine="edge", follow_outside_links=True)
    yield KnowledgeBase(s)
    close_client(s.store)


def test_a_link_to_a_file_outside_the_folder_is_skipped_with_one_warning_naming_the_setting(kb, docs, linked, caplog):
    with caplog.at_level(logging.WARNING):
        report = Ingestor(kb).run([docs])
    assert report.files == 3 and [Path(p).name for p, _ in report.skipped] == ["keys.md"]
    warned = [r.getMessage() for r in caplog.records if "keys.md" in r.getMessage()]
    assert warned == [
        f"skipping {docs / 'keys.md'}: a symbolic link to {linked}, outside the ingested folder: not followed "
        "(set ingestion.follow_outside_links = true, RAGS_EXPERT_INGESTION__FOLLOW_OUTSIDE_LINKS=true, to ingest it)"
    ]
    assert report.formats["Markdown"].outside == 1
    assert not any("zebra" in p["content"] for _, p in kb.scroll_payloads(["content"]))
    assert str(linked) not in _sources(kb)


def test_followed_outside_links_are_stored_under_the_link_and_pruned_when_it_goes(following, docs, linked):
    report = Ingestor(following).run([docs])
    assert report.files == 4 and not report.skipped
    link = str(docs.resolve() / "keys.md")
    assert link in _sources(following) and str(linked) not in _sources(following)
    (docs / "keys.md").unlink()  # the target stays: before, its chunks stayed too, stored under its path
    pruned = Ingestor(following).run([docs], prune=True)
    assert pruned.files_pruned == 1 and link not in _sources(following)
    assert not any("zebra" in p["content"] for _, p in following.scroll_payloads(["content"]))


def test_prune_removes_what_an_earlier_version_stored_under_an_outside_target(kb, docs, linked):
    """Before, the link's chunks were stored under the target's path, the chunks ``ingest TARGET`` stores."""
    Ingestor(kb).run([linked])
    assert str(linked) in _sources(kb)
    Ingestor(kb).run([docs])  # without --prune nothing is removed
    assert str(linked) in _sources(kb)
    report = Ingestor(kb).run([docs], prune=True)
    assert report.files_pruned == 1 and str(linked) not in _sources(kb)
    kept = Ingestor(kb).run([docs, linked], prune=True)  # ingested in the same run: the target's own chunks stay
    assert kept.files_pruned == 0 and str(linked) in _sources(kb)


def test_a_link_no_longer_followed_loses_its_chunks_on_prune(tmp_path, docs, linked):
    following = make_settings(tmp_path / "data", follow_outside_links=True)
    Ingestor(KnowledgeBase(following)).run([docs])
    close_client(following.store)
    kb = KnowledgeBase(make_settings(tmp_path / "data"))
    assert str(docs.resolve() / "keys.md") in _sources(kb)
    report = Ingestor(kb).run([docs], prune=True)
    assert report.files_pruned == 1 and str(docs.resolve() / "keys.md") not in _sources(kb)
    close_client(kb.settings.store)


def test_a_link_to_a_file_of_the_same_folder_is_ingested_once_under_the_file(kb, docs):
    (docs / "sub" / "again.txt").symlink_to(docs / "paris.txt")
    (docs / "loop.md").symlink_to("loop.md")  # a loop is no outside link: its warning says what it is
    report = Ingestor(kb).run([docs])
    assert report.files == 3 and [(Path(p).name, r.split(": ")[-1]) for p, r in report.skipped] == [
        ("loop.md", "symlink loop")
    ]
    assert _sources(kb) == {os.path.realpath(docs / n) for n in ("qdrant.md", "paris.txt", "sub/cats.html")}
