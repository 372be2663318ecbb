"""The relevant chunks as the answer reads them: which are kept, and each one's refined text."""

from __future__ import annotations

from helpers.documents import make_docs

from rags_expert.citations import chunk_id
from rags_expert.rag._shared.context import keep_context, refined_context


def test_the_context_keeps_the_best_ranked_new_chunks_and_the_latest_earlier_ones():
    """Moved from tests/rag/answer/test_speculation.py with the function it tests."""
    a, b, c, d, e = make_docs({t: f"chunk {t}" for t in "abcde"})
    assert keep_context([a, b, c], [d, e], 4) == [b, c, d, e]
    assert keep_context([a, b, c], [d, e], 1) == [d]  # the lower-ranked new chunk is dropped, not the best
    assert keep_context([], [a, b, c], 2) == [a, b]
    assert keep_context([a], [], 3) == [a]


def test_a_refined_chunk_reads_as_its_strips_with_its_own_metadata_and_id():
    a, b = make_docs({"a": "First. Second. Third.", "b": "Untouched text."})
    refined = refined_context([a, b], {chunk_id(a): "Second."})
    assert [d.page_content for d in refined] == ["Second.", "Untouched text."]
    assert refined[0].metadata == a.metadata and refined[0].id == a.id
    assert refined[1] is b  # a chunk not refined is the same document
    assert refined_context([a, b], {}) == [a, b]
