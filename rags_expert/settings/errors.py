"""One wording for an invalid setting, wherever a user meets it: ``top_k=-3 is invalid: must be ≥ 1 (retrieval.top_k)``.

Every surface that validates settings a user gave reads pydantic's ``ValidationError`` through here: the CLI
(environment variables and flags, :mod:`rags_expert.cli.support`), Fred tuning values
(:mod:`rags_expert.fred.tuning`) and per-request options (:mod:`rags_expert.rag.options`). Each names the value
by what the user typed (an environment variable, a flag, a Fred field), shows the value (never a secret's, and
cut when long) and says the bound it broke, with the setting's path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from rags_expert.secrets import MASK, redact

VALUE_CHARS = 60
"""The most characters of an invalid value an error line shows."""
SECRET_ENDINGS = ("key", "token", "password", "secret")
"""A setting whose name ends in one of these (``api_key``, ``kf_token``) never has its value shown."""

_BOUNDS = {
    "greater_than_equal": ("ge", "≥"),
    "greater_than": ("gt", ">"),
    "less_than_equal": ("le", "≤"),
    "less_than": ("lt", "<"),
}
_KINDS = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "dict_type": "must be a mapping",
    "list_type": "must be a list",
    "json_invalid": "must be valid JSON",
    "extra_forbidden": "no such setting",
    "missing": "is required",
}


def constraint(error: ErrorDetails | Mapping[str, Any]) -> str:
    """What the value must be, in words: ``must be ≥ 1``, ``must be one of 'dense', 'sparse' or 'hybrid'``."""
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind in _BOUNDS:
        key, sign = _BOUNDS[kind]
        return f"must be {sign} {ctx.get(key)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    unit = "character(s)" if kind.startswith("string") else "item(s)"
    if kind in ("string_too_short", "too_short"):
        return f"must have at least {ctx.get('min_length')} {unit}"
    if kind in ("string_too_long", "too_long"):
        return f"must have at most {ctx.get('max_length')} {unit}"
    if kind in _KINDS:
        return _KINDS[kind]
    message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def shown_value(value: Any, *, secret: bool = False) -> str:
    """The value as an error line shows it: ``***`` for a secret, credentials masked, cut at :data:`VALUE_CHARS`."""
    if secret:
        return MASK
    text = "''" if value == "" else redact(value if isinstance(value, str) else repr(value))
    text = " ".join(text.split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def is_secret_path(path: str) -> bool:
    """Whether the setting at ``path`` holds a credential (its value is never shown): a ``SecretStr`` setting
    of either agent, or a name ending like one."""
    return path in _secret_paths() or path.rsplit(".", 1)[-1].lower().endswith(SECRET_ENDINGS)


@cache
def _secret_paths() -> frozenset[str]:
    """The paths of every ``SecretStr`` setting (``checkpointer.url``, ``llm.api_key`` ...)."""
    from rags_expert.settings.agents import (  # the models import this module's users
        KGExpertSettings,
        RagsExpertSettings,
    )

    def walk(model: type[BaseModel], prefix: str) -> Iterator[str]:
        for name, info in model.model_fields.items():
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                yield from walk(annotation, f"{prefix}{name}.")
            elif "SecretStr" in str(annotation):
                yield prefix + name

    return frozenset(path for agent in (RagsExpertSettings, KGExpertSettings) for path in walk(agent, ""))


def invalid_value(name: str | None, error: ErrorDetails | Mapping[str, Any], path: str | None = None) -> str:
    """``name=value is invalid: <constraint> (path)`` for one error of a ``ValidationError`` (``value is
    invalid: ...`` without a name, e.g. after a flag argparse names already).

    ``path`` defaults to the error's location (left out when it is the name); the value is the input pydantic
    was given.
    """
    path = path if path is not None else ".".join(str(p) for p in error.get("loc", ()))
    if error.get("type") == "extra_forbidden":  # its value is not shown: a misspelt key may hold a secret
        return f"{name or 'the key'} is not a setting" + (f" ({path})" if path and path != name else "")
    value = shown_value(error.get("input"), secret=is_secret_path(path or name or ""))
    where = f" ({path})" if path and path != name else ""
    return f"{name + '=' if name else ''}{value} is invalid: {constraint(error)}{where}"


def describe_validation_error(
    exc: ValidationError, name_of: Callable[[str], str] | Mapping[str, str] | None = None
) -> str:
    """One line for every error of ``exc``, ``; ``-joined; ``name_of`` gives the name the user knows for a
    settings path (default: the path's last part)."""
    parts = []
    for error in exc.errors():
        path = ".".join(str(p) for p in error["loc"])
        if not path:  # a check of the whole model (a model validator)
            parts.append(constraint(error))
            continue
        if callable(name_of):
            name = name_of(path)
        else:
            name = (name_of or {}).get(path) or path.rsplit(".", 1)[-1]
        parts.append(invalid_value(name, error, path))
    return "; ".join(parts)


__all__ = ["constraint", "describe_validation_error", "invalid_value", "is_secret_path", "shown_value"]
