"""What every ``rags-expert`` subcommand shares: settings from flags, one-line errors, redacted logging.

* :class:`OneLineParser`: an argparse parser whose usage errors are one line and exit 2.
* :func:`setting_type`: an argparse ``type`` that validates a flag against its setting's own
  constraints (``-k -1`` → ``argument -k: Input should be greater than or equal to 1``).
* :func:`settings_from_args`: the environment's settings with the flags a subcommand declares
  (``set_defaults(settings_flags={dest: "section.field"})``) merged on top, validated once.
* :func:`describe_settings_error`: ``RAGS_EXPERT_RETRIEVAL__TOP_K (retrieval.top_k): <constraint>``; an unknown
  key is ``... (llm.modle): Extra inputs are not permitted (no such setting; did you mean llm.model?)``.
* :func:`question_error`: the one-line error for a question over ``max_question_chars``, before anything loads.
* :func:`configure_logging`: the root handler, with a :class:`~rags_expert.redaction.RedactingFilter`
  that scrubs every record of every logger.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, cast, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_settings import SettingsError

from rags_expert.limits import QuestionTooLongError, check_question
from rags_expert.redaction import install_log_redaction, redact, url_secrets
from rags_expert.settings import LEGACY_RETRIEVAL_KEYS, AgentSettings, KGExpertSettings, RagsExpertSettings

AGENT_SETTINGS: tuple[type[AgentSettings], ...] = (RagsExpertSettings, KGExpertSettings)
"""The per-agent settings models a flag or an environment variable may belong to."""

SETTINGS_ERRORS = (ValidationError, SettingsError)


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (``rags-expert ask: error: argument -k/--top-k: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print the one-line error (with a pointer to ``--help``) and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def setting_type(path: str) -> Callable[[str], Any]:
    """An argparse ``type`` checking a flag's value against the setting at ``path`` (``section.field``)."""
    section, name = path.split(".")
    model = next(m for m in AGENT_SETTINGS if section in m.model_fields)
    section_model = cast(type[BaseModel], model.model_fields[section].annotation)  # a section is a model
    info = section_model.model_fields[name]
    form: Any = Annotated[info.annotation, info]  # built at run time: not a static type form
    adapter: TypeAdapter[Any] = TypeAdapter(form)

    def parse(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{exc.errors()[0]['msg']} (got {text!r})") from None

    parse.__name__ = path
    return parse


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Input should be a valid integer (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"Input should be greater than or equal to 1 (got {text!r})")
    return value


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the given flags override, as ``{"section.field": value}``."""
    flags = getattr(args, "settings_flags", None) or {}
    return {path: value for dest, path in flags.items() if (value := getattr(args, dest, None)) is not None}


def settings_from_args(args: argparse.Namespace, base: AgentSettings | None = None) -> AgentSettings:
    """``base`` (default: the environment's settings of the subcommand's agent, ``set_defaults(settings_class=
    ...)``, else the RAG agent's) with the command line's overrides, validated."""
    overrides = _overrides(args)
    if base is None:
        nested: dict[str, Any] = {}
        for path, value in overrides.items():
            section, name = path.split(".")
            nested.setdefault(section, {})[name] = value
        return getattr(args, "settings_class", RagsExpertSettings)(**nested)
    return base.updated(overrides)


def args_settings(args: argparse.Namespace) -> AgentSettings:
    """The settings ``main`` built for this command (built here when a caller skipped ``main``)."""
    settings = getattr(args, "settings", None)
    if settings is None:
        settings = args.settings = settings_from_args(args)
    return settings


def question_error(question: str, settings: AgentSettings) -> str | None:
    """``error: the question has N characters, more than the limit of M (setting ...)`` when ``question`` is too
    long for ``settings`` (the graphs' own check, made before a model or the knowledge base is loaded), else None."""
    try:
        check_question(question.strip(), settings.max_question_chars)
    except QuestionTooLongError as exc:
        return f"error: {exc}"
    return None


def env_name(loc: tuple[Any, ...]) -> str:
    """The environment variable of a setting location, e.g. ``RAGS_EXPERT_RETRIEVAL__TOP_K``."""
    return "RAGS_EXPERT_" + "__".join(str(p).upper() for p in loc if isinstance(p, str))


def describe_settings_error(exc: Exception, flags: dict[str, str] | None = None) -> str:
    """One line naming each invalid setting (its environment variable, or ``flags[path]``) and its constraint."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                name, why = _env_variable(err["loc"]), f"{err['msg']} (no such setting{_suggestion(err['loc'])})"
            else:
                name, why = env_name(err["loc"]), err["msg"]
            parts.append(f"{(flags or {}).get(path) or name} ({path}): {why}")
        return "invalid setting " + "; ".join(parts)
    culprits = [f"{name} ({path}): not valid JSON ({why})" for name, path, why in _unparsable_env()]
    return "invalid setting " + "; ".join(culprits) if culprits else f"invalid settings: {exc}"


def _env_variable(loc: tuple[Any, ...]) -> str:
    """The environment variable behind an unknown key: its own name, or for a misspelt section
    (``lmm``) the first variable under it (``RAGS_EXPERT_LMM__MODEL``)."""
    name = env_name(loc)
    if name in os.environ:
        return name
    under = sorted(v for v in os.environ if v.upper().startswith(name + "__"))
    return under[0] if under else name


def _suggestion(loc: tuple[Any, ...]) -> str:
    """``; did you mean llm.model?`` when an unknown key is close to a setting of its section, else ''."""
    path = [str(p) for p in loc]
    if len(path) == 1:
        known: set[str] = {name for agent in AGENT_SETTINGS for name in agent.model_fields}
    else:
        known = set(getattr(_field_annotation(path[:-1]), "model_fields", {}))
    match = difflib.get_close_matches(path[-1], sorted(known), n=1)
    return f"; did you mean {'.'.join([*path[:-1], match[0]])}?" if match else ""


def _field_annotation(path: list[str]) -> Any:
    """The annotation of the setting at ``path`` (e.g. ``["retrieval", "library_tags"]``; an old name such as
    ``["retrieval", "kf_token"]`` is read as its new place) in either agent's settings, None if unknown."""
    if len(path) == 2 and path[0] == "retrieval" and path[1] in LEGACY_RETRIEVAL_KEYS:
        path = list(LEGACY_RETRIEVAL_KEYS[path[1]])
    for agent in AGENT_SETTINGS:
        model: Any = agent
        annotation = None
        for part in path:
            fields = getattr(model, "model_fields", {})
            if part not in fields:
                break
            annotation = model = fields[part].annotation
        else:
            return annotation
    return None


def _unparsable_env() -> list[tuple[str, str, str]]:
    """``(variable, path, reason)`` of each ``RAGS_EXPERT_*`` variable for a list, dict or section setting
    whose value is not JSON (pydantic-settings parses those as JSON and reports only the section)."""
    out = []
    for name, value in sorted(os.environ.items()):
        if not name.startswith("RAGS_EXPERT_"):
            continue
        path = name[len("RAGS_EXPERT_") :].lower().split("__")
        annotation = _field_annotation(path)
        complex_type = (
            get_origin(annotation) in (list, dict)
            or isinstance(annotation, type)
            and (issubclass(annotation, BaseModel))
        )
        if not complex_type:
            continue
        try:
            json.loads(value)
        except ValueError as exc:
            out.append((name, ".".join(path), f"{type(exc).__name__}: {exc}"))
    return out


def env_secrets() -> list[str]:
    """The environment's secrets: values of secret settings (``RAGS_EXPERT_*`` variables of ``SecretStr``
    fields, ``OPENAI_API_KEY``) and the credentials inside any URL-valued variable.

    Known before the settings validate, so that an error about an invalid environment stays redacted.
    """
    out: list[str] = []
    for name, value in os.environ.items():
        if not (name.startswith(("RAGS_EXPERT_", "OPENAI_")) and value):
            continue
        path = name[len("RAGS_EXPERT_") :].lower().split("__")
        if name == "OPENAI_API_KEY" or (
            name.startswith("RAGS_EXPERT_") and "SecretStr" in str(_field_annotation(path))
        ):
            out.append(value)
        out.extend(url_secrets(value))
    return out


class SecretBook:
    """The values the CLI's output must never show: the environment's, plus the settings' once loaded."""

    def __init__(self) -> None:
        self.values: list[str] = env_secrets()

    def add_settings(self, settings: AgentSettings) -> None:
        """Add the loaded settings' secrets (keys, passwords, URL credentials in every form)."""
        self.values = list(dict.fromkeys([*self.values, *settings.secrets()]))

    def __call__(self) -> list[str]:
        return self.values

    def redact(self, text: str) -> str:
        """``text`` with every known secret and credential-shaped token masked."""
        return redact(text, self.values)


def configure_logging(verbosity: int, book: SecretBook) -> None:
    """Log to stderr (WARNING; INFO with ``-v``; DEBUG with ``-vv``), every record redacted."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger()
    if not root.handlers:  # like logging.basicConfig: a host's (or pytest's) logging set-up is left as it is
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(levelname)s %(name)s: %(message)s" if verbosity > 1 else "%(levelname)s %(message)s")
        )
        root.addHandler(handler)
        root.setLevel(level)
    logging.captureWarnings(True)  # warnings.warn texts go through the handlers (and the filter) too
    install_log_redaction(book)
