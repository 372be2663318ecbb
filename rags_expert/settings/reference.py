"""The settings reference (docs/settings.md), generated from the models' fields and descriptions."""

from __future__ import annotations

from pydantic import BaseModel, SecretStr

from rags_expert.settings.agents import (
    AgentSettings,
    KGExpertSettings,
    RagsExpertSettings,
)

INTRO = [
    "# Settings reference",
    "",
    "Generated from `rags_expert/settings/` by `rags-expert settings > docs/settings.md`",
    "(a test keeps this page in sync). Each agent has its own settings model, composed of sections by concern:",
    "`RagsExpertSettings` (the RAG agent) and `KGExpertSettings` (the KG-query agent) share the sections of",
    "`AgentSettings`. Every setting can be given in code (a settings object or a dict), in a host's YAML",
    "`settings:` block, or as an environment variable: `RAGS_EXPERT_` + the path in capitals with `__` between",
    "levels, e.g. `RAGS_EXPERT_LLM__MODEL=gpt-4o-mini`, `RAGS_EXPERT_RETRIEVAL__TOP_K=6`,",
    "`RAGS_EXPERT_KG__MAX_STEPS=3`. One settings block or environment may serve both agents: each ignores the",
    "other agent's sections.",
    "",
    "Unknown names are errors, not ignored: a key a section does not have (`llm.modle` in a dict or YAML,",
    "`RAGS_EXPERT_LLM__MODLE`), an unknown section in a variable (`RAGS_EXPERT_LMM__MODEL`) and an unknown",
    "top-level key of a dict or YAML block fail validation with a pydantic `ValidationError` naming the path",
    "(`Extra inputs are not permitted`; the error never repeats the value). The CLI prints it as one line",
    "(`RAGS_EXPERT_LLM__MODLE is not a setting (llm.modle); did you mean llm.model?`) and exits 2. Every number",
    "has a lower and an upper bound; a value outside is refused when the settings are read, in the words every",
    "surface uses (CLI, Fred tuning, request options): `RAGS_EXPERT_BUDGET__MAX_CALLS=1000000 is invalid: must be",
    "≤ 100000 (budget.max_calls)`. Two exceptions: the other agent's sections and top-level keys are accepted and ignored (see",
    "above), and a `RAGS_EXPERT_<NAME>` variable without `__` is not checked, because that prefix is shared",
    "with variables that are not settings (`RAGS_EXPERT_DATA_DIR`).",
    "",
    "Old names: the `retrieval` section used to hold the store, embedding, ingestion and knowledge-flow settings.",
    "`retrieval.<key>` (and `RAGS_EXPERT_RETRIEVAL__<KEY>`) is still read, with a DeprecationWarning, as:",
    "`data_dir`, `url`, `api_key`, `engine`, `collection`, `timeout`, `local_wal` → `store.<key>`;",
    "`embedding_<key>` → `embeddings.<key>`; `chunk_size`, `chunk_overlap`, `upsert_batch_size` →",
    "`ingestion.<key>`; `kf_<key>` → `knowledge_flow.<key>`. When both names are given, the new one wins.",
    "",
]


class _Raw(str):
    def __repr__(self) -> str:
        return str(self)


def _row(prefix: str, name: str, info) -> str:
    """One table row: path, type, default, environment variable, meaning."""
    factory = info.default_factory
    if factory is not None and factory not in (list, dict):
        default: object = _Raw(f"{getattr(factory, '__name__', 'factory')}()")  # environment-dependent
    else:
        default = info.get_default(call_default_factory=True)
    if isinstance(default, SecretStr):
        default = "***"
    annotation = info.annotation
    type_name = getattr(annotation, "__name__", None) or str(annotation)
    type_name = type_name.replace("typing.", "").replace("pydantic.types.", "").replace("pathlib.", "")
    type_name = type_name.replace(" | ", " or ")
    env = "RAGS_EXPERT_" + (prefix + name).upper().replace(".", "__")
    return f"| `{prefix}{name}` | `{type_name}` | `{default!r}` | `{env}` | {info.description or ''} |"


def _walk(model: type[BaseModel], prefix: str, skip: set[str], lines: list[str], title: str) -> None:
    """A table of ``model``'s plain fields, then one per section (fields in ``skip`` left out)."""
    rows, nested = [], []
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            nested.append((name, annotation))
        else:
            rows.append(_row(prefix, name, info))
    if rows:
        lines.extend(
            [
                f"### {title}",
                "",
                "| setting | type | default | environment | meaning |",
                "|---|---|---|---|---|",
                *rows,
                "",
            ]
        )
    for name, sub in nested:
        _walk(sub, f"{prefix}{name}.", set(), lines, f"{prefix}{name} (`{sub.__name__}`)")


def settings_reference() -> str:
    """The settings reference (docs/settings.md) generated from the models' fields and descriptions."""
    lines = list(INTRO)
    shared = set(AgentSettings.model_fields)
    parts = [
        ("Both agents (`AgentSettings`)", AgentSettings, set()),
        ("RAG agent only (`RagsExpertSettings`)", RagsExpertSettings, shared),
        ("KG-query agent only (`KGExpertSettings`)", KGExpertSettings, shared),
    ]
    for title, model, skip in parts:
        lines.extend([f"## {title}", ""])
        _walk(model, "", skip, lines, "top level")
    return "\n".join(lines).rstrip() + "\n"
