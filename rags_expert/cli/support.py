"""What every ``rags-expert`` subcommand shares: settings from flags, one-line errors, redacted logging.

* :class:`OneLineParser`: an argparse parser whose usage errors are one line and exit 2, and whose help is
  plain text (:func:`plain_text`: descriptions taken from docstrings lose their reST markup).
* :func:`text_arg`: an argparse ``type`` for a question or query: bytes that are not UTF-8 (a Latin-1
  terminal) are read as Latin-1 instead of reaching the model as undecodable surrogates.
* :func:`setting_type`: an argparse ``type`` that validates a flag against its setting's own
  constraints (``-k -1`` → ``argument -k: -1 is invalid: must be ≥ 1 (retrieval.top_k)``).
* :func:`settings_from_args`: the environment's settings with the flags a subcommand declares
  (``set_defaults(settings_flags={dest: "section.field"})``) merged on top, validated once.
* :func:`describe_settings_error`: ``RAGS_EXPERT_RETRIEVAL__TOP_K=-3 is invalid: must be ≥ 1 (retrieval.top_k)``
  (the wording of :mod:`rags_expert.settings.errors`, shared with Fred tuning and per-request options); an
  unknown key is ``RAGS_EXPERT_LLM__MODLE is not a setting (llm.modle); did you mean llm.model?`` (its value unshown).
* :func:`question_error`: the one-line error for a question over ``max_question_chars``, before anything loads.
* :func:`printable`: a value from a file (a file name, a title, a uid) made safe for one line of output: control
  characters escaped, a long value cut.
* :func:`configure_logging`: the root handler, with a :class:`~rags_expert.secrets.RedactingFilter`
  that scrubs every record of every logger.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, cast, get_origin

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic_settings import SettingsError

from rags_expert.limits import (
    QuestionTooLongError,
    check_question,
    printable,  # noqa: F401 - re-exported: the CLI's one-line values
)
from rags_expert.secrets import install_log_redaction
from rags_expert.settings import AgentSettings, RagsExpertSettings
from rags_expert.settings.environment import AGENT_SETTINGS, SecretBook, field_annotation
from rags_expert.settings.errors import invalid_value, shown_value

"""The per-agent settings models a flag or an environment variable may belong to."""

SETTINGS_ERRORS = (ValidationError, SettingsError)


# :role:`text`, :role:`title <target>`, :role:`~a.b.name` (any domain:role); ``literal``; `interpreted`, `link`_
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")
_INTERPRETED = re.compile(r"`([^`]+)`_{0,2}")
_TITLE = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)


def _role_text(match: re.Match[str]) -> str:
    """What a reST role shows: its explicit title, else its target (``~`` keeps the last dotted part)."""
    body = match.group(1)
    if titled := _TITLE.match(body):
        return titled.group(1)
    return body[1:].rsplit(".", 1)[-1] if body.startswith("~") else body.lstrip("!")


def plain_text(text: str | None) -> str | None:
    """``text`` (a docstring or help string) without its reST markup: roles, ````literals```` and backticks."""
    if not text:
        return text
    return _INTERPRETED.sub(r"\1", _LITERAL.sub(r"\1", _ROLE.sub(_role_text, text)))


class _PlainSubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose help, description and epilog are plain text; a subcommand's ``--help`` opens with the
    line the command list shows for it when it has no description of its own."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        for key in ("help", "description", "epilog"):
            kwargs[key] = plain_text(kwargs.get(key))
        if kwargs.get("description") is None:
            kwargs["description"] = kwargs.get("help")
        return super().add_parser(name, **kwargs)


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (``rags-expert ask: error: argument -k/--top-k: ...``), exit status 2; help text
    as plain text (the description and epilog, often from docstrings, go through :func:`plain_text`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in ("description", "epilog"):
            kwargs[key] = plain_text(kwargs.get(key))
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _PlainSubParsers)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """An argument whose help is plain text."""
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain_text(kwargs["help"])
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print the one-line error (with a pointer to ``--help``) and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def text_arg(text: str) -> str:
    """A question or query from the command line, as text.

    Python hands over argv bytes that are not valid in the locale's encoding as lone surrogates
    (``surrogateescape``), which fail much later, wherever the text is encoded (the HTTP request, the store).
    Such an argument is re-read from its bytes: UTF-8 where it is UTF-8, else Latin-1, which decodes any byte
    (``b"caf\\xe9"`` → ``café``, the usual meaning on a terminal that is not UTF-8).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    return text


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
            raise argparse.ArgumentTypeError(invalid_value(None, exc.errors()[0], path)) from None

    parse.__name__ = path
    return parse


_POSITIVE_INT: TypeAdapter[int] = TypeAdapter(Annotated[int, Field(ge=1, le=2**63 - 1)])


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts: an integer of at least 1."""
    try:
        return _POSITIVE_INT.validate_python(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(invalid_value(None, exc.errors()[0], "")) from None


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
    """One line naming each invalid setting (its environment variable, or ``flags[path]``), its value and its
    constraint: ``RAGS_EXPERT_RETRIEVAL__TOP_K=-3 is invalid: must be ≥ 1 (retrieval.top_k)``."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"])
            unknown = err["type"] == "extra_forbidden"
            name = (flags or {}).get(path) or (_env_variable(err["loc"]) if unknown else env_name(err["loc"]))
            if name in os.environ:  # the text the user set (a misspelt section's input is a dict)
                err = {**err, "input": os.environ[name]}
            parts.append(invalid_value(name, err, path) + (_suggestion(err["loc"]) if unknown else ""))
        return "; ".join(parts)
    culprits = [
        f"{name}={shown_value(os.environ.get(name, ''))} is invalid: not valid JSON ({why}) ({path})"
        for name, path, why in _unparsable_env()
    ]
    return "; ".join(culprits) if culprits else f"invalid settings: {exc}"


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
        known = set(getattr(field_annotation(path[:-1]), "model_fields", {}))
    match = difflib.get_close_matches(path[-1], sorted(known), n=1)
    return f"; did you mean {'.'.join([*path[:-1], match[0]])}?" if match else ""


def _unparsable_env() -> list[tuple[str, str, str]]:
    """``(variable, path, reason)`` of each ``RAGS_EXPERT_*`` variable for a list, dict or section setting
    whose value is not JSON (pydantic-settings parses those as JSON and reports only the section)."""
    out = []
    for name, value in sorted(os.environ.items()):
        if not name.startswith("RAGS_EXPERT_"):
            continue
        path = name[len("RAGS_EXPERT_") :].lower().split("__")
        annotation = field_annotation(path)
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
