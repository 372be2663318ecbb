"""Multi-hop retrieval in the RAG graph (:mod:`rags_expert.rag.retrieve.hops`, docs/concepts.md#multi-hop)."""

from __future__ import annotations

from pydantic import Field

from rags_expert.settings.base import SettingsSection


class MultihopSettings(SettingsSection):
    """A second search for the entity a question needs but does not name (the bridge): after grading, the
    relevant chunks of the first search propose a follow-up query (the model in the ``standard`` profile, the
    evidence in ``small``); its chunks are graded like the others and the answer cites chunks of both hops."""

    max_hops: int = Field(
        2,
        ge=1,
        le=4,
        description="Searches one question may chain (1: off, every question is answered from one search and its "
        "rephrasings). Each hop after the first costs at most one model call for its query (none in the 'small' "
        "profile) and the grading of its chunks.",
    )
    top_k: int | None = Field(
        None,
        ge=1,
        le=50,
        description="Chunks a follow-up search keeps (None: retrieval.top_k, or the request's top_k when smaller).",
    )
    pair_coverage: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="'small' profile: two retrieved chunks, one naming the other's title, that together hold this "
        "share of the question's terms are both relevant, and the answer may quote the naming sentence and the named "
        "chunk's answer sentence (a two-document question answered from one search). Tuned on HotpotQA dev. Off "
        "with max_hops 1.",
    )
