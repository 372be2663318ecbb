"""The data folder's passage vectors (issue 54): read back bit for bit, embedded once, never an error."""

from __future__ import annotations

import os
import sqlite3

import pytest
from langchain_core.embeddings import Embeddings

from rags_expert.retrieval.embeddings import WordLlamaEmbeddings
from rags_expert.retrieval.vector_cache import CachedEmbeddings, VectorCache, passage_embeddings
from rags_expert.settings import StoreSettings


class Counting(Embeddings):
    """The real wordllama model, counting the passages it is asked to embed."""

    def __init__(self) -> None:
        self.inner = WordLlamaEmbeddings()
        self.model_name = self.inner.model_name
        self.dimension = self.inner.dimension
        self.asked: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.asked += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def test_vectors_come_back_bit_for_bit_float32_or_float64(tmp_path):
    cache = VectorCache(tmp_path / "vectors.sqlite")
    single = [0.5, -0.25, 1.0 / 3.0]  # 1/3 is no float32: stored as float64
    exact = [0.5, -0.25, 0.125]
    cache.put("m", {"a": single, "b": exact})
    cache.close()
    again = VectorCache(tmp_path / "vectors.sqlite")
    assert again.get("m", ["a", "b", "c"]) == {"a": single, "b": exact}
    assert again.get("other model", ["a"]) == {}
    assert again.missing("m", ["b", "c", "c"]) == ["c"]


def test_a_passage_is_embedded_once_and_read_by_the_next_process(tmp_path):
    model = Counting()
    texts = [
        "The read timeout defaults to 30 seconds.",
        "Pooling is off by default.",
        "The read timeout defaults to 30 seconds.",
    ]
    first = CachedEmbeddings(model, VectorCache(tmp_path / "vectors.sqlite")).embed_documents(texts)
    assert model.asked == texts[:2]
    assert first == model.inner.embed_documents(texts)
    # a new cache object on the same file stands for the next process: nothing is embedded again
    second = CachedEmbeddings(model, VectorCache(tmp_path / "vectors.sqlite")).embed_documents([*texts, "New text."])
    assert model.asked == [*texts[:2], "New text."]
    assert second[:3] == first


def test_a_folder_that_cannot_hold_the_file_only_costs_time(tmp_path):
    model = Counting()
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    cached = CachedEmbeddings(model, VectorCache(blocked / "vectors.sqlite"))
    assert cached.embed_documents(["One."]) == model.inner.embed_documents(["One."])
    assert cached.embed_documents(["One."]) == model.inner.embed_documents(["One."])


def test_a_corrupt_file_only_costs_time(tmp_path):
    path = tmp_path / "vectors.sqlite"
    path.write_bytes(os.urandom(4096))
    model = Counting()
    cached = CachedEmbeddings(model, VectorCache(path))
    assert cached.embed_documents(["One."]) == model.inner.embed_documents(["One."])
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(path).execute("SELECT * FROM vectors").fetchall()


def test_a_qdrant_server_keeps_no_vectors_in_a_folder(tmp_path):
    model = Counting()
    assert passage_embeddings(model, StoreSettings(url="http://localhost:6333", data_dir=tmp_path)) is model
    kept = passage_embeddings(model, StoreSettings(data_dir=tmp_path))
    assert isinstance(kept, CachedEmbeddings) and kept.cache.path == tmp_path / "vectors.sqlite"


class Bulk(Counting):
    """Counting, with an ingest's bulk path beside the plain one."""

    def __init__(self) -> None:
        super().__init__()
        self.bulk: list[str] = []

    def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        self.bulk += texts
        return self.inner.embed_documents(texts)


def test_an_ingest_keeps_the_chunk_vectors_it_makes_so_the_fill_does_not_embed_them_again(tmp_path):
    inner = Bulk()
    cached = CachedEmbeddings(inner, VectorCache(tmp_path / "vectors.sqlite"))
    chunks = ["The default timeout is 30 seconds.", "Workers default to 4.", "The default timeout is 30 seconds."]
    vectors = cached.embed_bulk(chunks)
    assert inner.bulk == chunks[:2] and inner.asked == []  # the bulk path, each text once
    assert vectors[0] == vectors[2] == inner.inner.embed_documents(chunks[:1])[0]
    # the evidence's fill later asks for the same texts, and a unit: only the unit is embedded
    cached.embed_documents([chunks[1], "Workers"])
    assert inner.asked == ["Workers"]
