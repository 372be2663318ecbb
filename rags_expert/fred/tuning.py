"""Fred tuning fields: our prompts and a few settings as Fred ``FieldSpec``s, and their values as our settings.

A Fred administrator edits an agent's tuning fields in the UI (or a request carries them as ``inline_tuning``);
the node reads them from ``ctx.tuning_values``. Each field maps onto something we already have:

* ``prompts.<key>`` (type ``prompt``, default: the packaged template) → ``settings.prompts[<key>]``, validated
  by :class:`~rags_expert.prompts.PromptStore` like any other override;
* ``settings.<name>`` → one of our typed settings (:data:`RAG_SETTINGS`, :data:`KG_SETTINGS`); its type,
  default, bounds and description are read from the settings model, so the Fred form and ``docs/settings.md``
  cannot disagree.

Values equal to the default (or blank prompts) change nothing; keys we do not know are ignored (Fred keeps its
own fields beside ours).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from rags_expert.prompts import PromptStore
from rags_expert.settings import AgentSettings
from rags_expert.settings.errors import describe_validation_error

S = TypeVar("S", bound=AgentSettings)

PROMPT_PREFIX = "prompts."
SETTING_PREFIX = "settings."

RAG_SETTINGS = {
    "top_k": "retrieval.top_k",
    "max_rephrases": "max_rephrases",
    "max_generations": "max_generations",
    "profile": "evidence.profile",
    "lessons": "lessons.enabled",
}
"""The RAG agent's Fred setting fields (``settings.<name>``) and the settings path each one sets."""

KG_SETTINGS = {
    "max_steps": "kg.max_steps",
    "score_threshold": "kg.score_threshold",
    "max_rows": "kg.max_rows",
    "lessons": "lessons.enabled",
}
"""The KG-query agent's Fred setting fields and the settings path each one sets."""

SETTING_UI = {"group": "Settings"}
PROMPT_UI = {"group": "Prompts", "textarea": True, "multiline": True, "max_lines": 20, "advanced": True}
"""How Fred's UI shows the fields: settings in one group, prompts as long text in an advanced group."""

SHARED_PROMPTS = ("grader_system", "condense_question", "lessons_block", "reflect")
"""Prompts of the shared grading and lesson module, which both agents use."""


def rag_prompt_keys(store: PromptStore) -> list[str]:
    """The prompts the RAG agent renders: every packaged key but the KG agent's own (``kg_*``)."""
    keys = store.keys()
    return [key for key in keys if not key.startswith("kg_")]


def kg_prompt_keys(store: PromptStore) -> list[str]:
    """The prompts the KG-query agent renders: its own (``kg_*``) and the shared ones."""
    keys = store.keys()
    return [key for key in keys if key.startswith("kg_") or key in SHARED_PROMPTS]


class TuningError(ValueError):
    """A tuning value breaks its setting's constraint; the message names the field, the value and the bound
    (``top_k=-3 is invalid: must be ≥ 1 (retrieval.top_k)``)."""


@dataclass(frozen=True)
class Tunable:
    """One Fred field: its key, and the settings path it sets (``None`` for a prompt)."""

    key: str
    path: str | None
    spec: dict[str, Any]
    """The ``FieldSpec`` arguments (type, title, default, description, min, max, enum)."""


def tunables(settings: AgentSettings, prompt_keys: Sequence[str], setting_paths: Mapping[str, str]) -> list[Tunable]:
    """The fields of one agent: its settings (described by the settings model) and its prompts."""
    store = PromptStore(settings.prompts, settings.prompt_dir)
    out = [
        Tunable(SETTING_PREFIX + name, path, _setting_spec(settings, path, name))
        for name, path in setting_paths.items()
    ]
    for key in prompt_keys:
        spec = {"type": "prompt", "title": f"Prompt: {key}", "default": store.get(key), "ui": PROMPT_UI}
        spec["description"] = f"The {key} prompt template ({{name}} fields as in the packaged file)."
        out.append(Tunable(PROMPT_PREFIX + key, None, spec))
    return out


def apply_tuning(settings: S, values: Mapping[str, Any], fields: Sequence[Tunable]) -> S:
    """``settings`` with the tuning ``values`` applied, validated like any settings (:class:`TuningError`
    naming each invalid field, its value and its bound, if not).

    Prompt values are added to the prompt overrides (``PromptStore.validate`` checks them when the agent
    starts); a blank prompt or one equal to the current template changes nothing.
    """
    by_key = {f.key: f for f in fields}
    prompts = dict(settings.prompts)
    paths: dict[str, Any] = {}
    for key, value in values.items():
        field = by_key.get(key)
        if field is None or value is None:
            continue
        if field.path is not None:
            paths[field.path] = value
        elif isinstance(value, str) and value.strip() and value != field.spec["default"]:  # the current template
            prompts[key.removeprefix(PROMPT_PREFIX)] = value
    if prompts != settings.prompts:
        paths["prompts"] = prompts
    try:
        return settings.updated(paths)
    except ValidationError as exc:
        names = {f.path: f.key.removeprefix(SETTING_PREFIX) for f in fields if f.path is not None}
        raise TuningError(describe_validation_error(exc, names)) from None


def _field_info(settings: BaseModel, path: str) -> tuple[FieldInfo, Any]:
    """The pydantic field at ``path`` and its current value."""
    model: Any = settings
    *sections, leaf = path.split(".")
    for name in sections:
        model = getattr(model, name)
    return type(model).model_fields[leaf], getattr(model, leaf)


def _setting_spec(settings: BaseModel, path: str, name: str) -> dict[str, Any]:
    """A FieldSpec's arguments for the setting at ``path``, from its type, value and constraints."""
    info, value = _field_info(settings, path)
    spec: dict[str, Any] = {
        "title": name.replace("_", " ").capitalize(),
        "default": value,
        "description": f"{info.description} (setting {path})",
        "ui": SETTING_UI,
    }
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        spec.update(type="select", enum=[str(v) for v in typing.get_args(annotation)])
    elif annotation is bool:
        spec["type"] = "boolean"
    elif annotation is int:
        spec["type"] = "integer"
    elif annotation is float:
        spec["type"] = "number"
    else:
        spec["type"] = "string"
    for bound in info.metadata:
        if isinstance(bound, annotated_types.Ge | annotated_types.Gt):
            spec["min"] = float(getattr(bound, "ge", getattr(bound, "gt", 0)))
        if isinstance(bound, annotated_types.Le | annotated_types.Lt):
            spec["max"] = float(getattr(bound, "le", getattr(bound, "lt", 0)))
    return spec
