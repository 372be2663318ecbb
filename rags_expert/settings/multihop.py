"""Multi-hop retrieval in the RAG graph (:mod:`rags_expert.rag.hops`, docs/concepts.md#multi-hop)."""

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
