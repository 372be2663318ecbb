"""The reranking stage between retrieval and grading (docs/retrieval.md#reranking).

The retriever returns ``rerank.candidates`` chunks, a reranker reorders them, and the ``top_k`` best go on to
grading, so the LLM-call bound is unchanged. Off unless set, except for the ``small`` model profile, where the
model-free evidence reranker raised HotpotQA dev recall@5 (docs/benchmarks-history.md#reranking-issue-25).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from rags_expert.settings.base import MAX_DELAY, MAX_SECONDS, SettingsSection

RerankKind = Literal["auto", "none", "evidence", "http", "compressor", "knowledge_flow"]
RerankApi = Literal["cohere", "tei"]


class RerankSettings(SettingsSection):
    """Which reranker reorders the retrieved chunks, and how many candidates it sees."""

    kind: RerankKind = Field(
        "auto",
        description="'none'; 'evidence' (model-free: the evidence scorer's term match fused with the retrieval "
        "rank); 'http' (a /rerank server: rerank.url, rerank.api); 'compressor' (a LangChain "
        "BaseDocumentCompressor: rerank.compressor, or RagsExpert(reranker=...)); 'knowledge_flow' (the "
        "knowledge-flow service's own cross-encoder, POST /vector/rerank); 'auto': 'evidence' for the small "
        "profile (measured to help), 'compressor' when the host passes reranker=, else 'none'.",
    )
    candidates: int = Field(
        20,
        ge=1,
        le=100,
        description="Chunks retrieved for the reranker to choose the top_k from (at least top_k are retrieved).",
    )
    evidence_weight: float = Field(
        2.0,
        ge=0.0,
        le=100.0,
        description="Evidence reranker: weight of the evidence match rank against the retrieval rank (both "
        "fused by reciprocal rank, constant rerank.rank_constant; tuned on HotpotQA dev).",
    )
    rank_constant: int = Field(
        5,
        ge=0,
        le=1000,
        description="Evidence reranker: the k of the reciprocal-rank fusion 1/(k + rank).",
    )
    link_bonus: float = Field(
        0.2,
        ge=0.0,
        le=10.0,
        description="Evidence reranker: added to the fused score of a chunk of another document whose title the "
        "best chunk names (the bridge of a two-hop question; 0: off; tuned on HotpotQA dev).",
    )
    url: str | None = Field(
        None,
        description="http: the rerank server's base URL (https://api.cohere.com, http://127.0.0.1:8080); the "
        "API's path (/v1/rerank or /rerank) is added unless the URL already ends in /rerank.",
    )
    api: RerankApi = Field(
        "cohere",
        description="http: the request shape: 'cohere' (POST /v1/rerank {model, query, documents, top_n} → "
        "{results: [{index, relevance_score}]}; also Jina, vLLM, Infinity, LiteLLM) or 'tei' (Hugging Face "
        "text-embeddings-inference: POST /rerank {query, texts, truncate} → [{index, score}]).",
    )
    model: str | None = Field(None, description="http, cohere shape: the model name sent (None: not sent).")
    api_key: SecretStr | None = Field(
        None, description="http: sent as 'Authorization: Bearer <key>' (None: no header). A secret: never logged."
    )
    timeout: float = Field(
        10.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds one rerank request may take (http: its whole reply, not each read of it).",
    )
    max_reply_bytes: int = Field(
        4_194_304,
        ge=1024,
        le=1_073_741_824,
        description="http: the longest reply read (4 MiB); a longer one is a fault (the retrieval order is kept).",
    )
    max_retries: int = Field(1, ge=0, le=10, description="http: retries on 429, 5xx, timeouts and refused connections.")
    retry_base_delay: float = Field(
        0.5, ge=0, le=MAX_DELAY, description="http: first wait before a retry (doubles, capped at rerank.timeout)."
    )
    compressor: str | None = Field(
        None,
        description="compressor: 'module:attribute' of a BaseDocumentCompressor instance, or of a class or "
        "function that builds one with no arguments.",
    )
