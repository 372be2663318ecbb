"""Prompt templates: the ``<key>.txt`` files of this package, overridable by key.

Every prompt is a ``<key>.txt`` file using ``str.format`` placeholders
(``{question}``); literal braces are doubled. The packaged templates define each
key's variables. A host overrides any key through ``settings.prompts`` (a dict)
or ``settings.prompt_dir`` (a directory of ``<key>.txt`` files); an override must
use the variables of the template it replaces (it may leave out the optional ones
listed in :data:`OPTIONAL_VARIABLES`) as plain ``{name}`` fields only — no
attribute access, indexing, format spec or conversion — which
:meth:`PromptStore.validate` checks when the agent starts.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

#: Variables an override may leave out (the prompt then simply goes without that context).
OPTIONAL_VARIABLES: dict[str, frozenset[str]] = {
    "generate": frozenset({"feedback", "lessons", "language"}),
    "generate_small": frozenset({"feedback", "lessons", "language"}),
    "generate_compact": frozenset({"feedback", "lessons", "language"}),
    "rephrase_query": frozenset({"previous_queries", "feedback"}),
    "answer_system": frozenset({"date"}),
    "failure_not_found": frozenset({"partial"}),
    "failure_budget": frozenset({"partial"}),
    "failure_error": frozenset({"component", "error", "question"}),
    "failure_retrieval": frozenset({"detail", "error", "question"}),
    "failure_request": frozenset({"detail", "question"}),
    "failure_too_long": frozenset({"detail"}),
    "reflect": frozenset({"feedback"}),
    "kg_draft": frozenset({"lessons"}),
    "refine_strips": frozenset({"title"}),
    "confirm_answer": frozenset({"lessons"}),
}


_TAGLIKE = re.compile(
    r"<\s*/?\s*(chunk|chunks|chunk_title|strip|strips|question|answer|expected|system|document|documents|task|result|failed_attempt|conversation|lesson|lessons)\b",
    re.I,
)


def neutralise(text: str) -> str:
    """Text that cannot open or close the prompts' data frames (``<chunk>``, ``</question>`` ...).

    Every value that comes from outside (chunks, questions, answers, database rows) is passed
    through this before it is put between the frames, so it stays data.
    """
    return _TAGLIKE.sub(lambda m: m.group(0).replace("<", "&lt;"), text)


class PromptError(ValueError):
    """An override names an unknown key, misses / adds a template variable, or uses a field that is
    not a plain ``{name}``; or a template cannot be rendered."""


def packaged_prompt_dir() -> Path:
    """The directory of the packaged prompts: this package, found through :mod:`importlib.resources`."""
    return Path(str(resources.files(__name__)))


def read_template(path: Path) -> str:
    """The text of one ``<key>.txt`` template; PromptError naming the file when it is not UTF-8 or unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(
            f"prompt file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise PromptError(f"prompt file {path} cannot be read ({type(exc).__name__}: {exc.strerror})") from None


@cache
def _load_dir(directory: Path) -> dict[str, str]:
    return {p.stem: read_template(p) for p in sorted(directory.glob("*.txt"))}


def _field_problem(name: str, conversion: str | None, spec: str | None) -> str | None:
    """Why a ``str.format`` field is not a plain ``{name}`` placeholder, or None when it is."""
    if name == "" or name[0].isdigit():
        return "is positional (name the variable)"
    if "." in name:
        return "uses attribute access"
    if "[" in name:
        return "uses indexing"
    if not name.isidentifier():
        return "is not a variable name"
    if conversion is not None:
        return f"uses a conversion (!{conversion})"
    if spec:
        return f"uses a format spec (:{spec})"
    return None


def template_variables(template: str) -> set[str]:
    """The ``{variables}`` of a template; raises PromptError on malformed braces or a field that is
    not a plain ``{name}`` (attribute access, indexing, a format spec, a conversion, ``{}``/``{0}``)."""
    return set(_template_variables(template))


@lru_cache(maxsize=256)
def _template_variables(template: str) -> frozenset[str]:
    """:func:`template_variables`, parsed once per template text (every model call renders two)."""
    try:
        fields = [(f, c, s) for _, f, s, c in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise PromptError(f"malformed template: {exc}") from exc
    names = set()
    for name, conversion, spec in fields:
        if problem := _field_problem(name, conversion, spec):
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise PromptError(
                f"field {shown} {problem}; only plain {{name}} placeholders are allowed "
                "(write literal braces as {{ }})"
            )
        names.add(name)
    return frozenset(names)


class PromptStore:
    """Packaged templates plus a host's overrides, validated against each other."""

    def __init__(
        self,
        overrides: Mapping[str, str] | None = None,
        override_dir: Path | str | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self._defaults = dict(_load_dir(base_dir or packaged_prompt_dir()))
        merged: dict[str, str] = {}
        if override_dir is not None:
            directory = Path(override_dir)
            if not directory.is_dir():
                raise PromptError(f"prompt_dir {directory} is not a directory")
            merged.update({p.stem: read_template(p) for p in sorted(directory.glob("*.txt"))})
        merged.update(overrides or {})
        self._overrides = merged
        self._templates = {**self._defaults, **merged}

    def validate(self) -> PromptStore:
        """Check every override against the packaged template; raise PromptError naming the problem."""
        for key, template in self._overrides.items():
            if key not in self._defaults:
                known = ", ".join(sorted(self._defaults))
                raise PromptError(f"unknown prompt key {key!r} (known keys: {known})")
            if not isinstance(template, str) or not template.strip():
                raise PromptError(f"prompt {key!r}: override is empty")
            try:
                got = template_variables(template)
            except PromptError as exc:
                raise PromptError(f"prompt {key!r}: {exc}") from None
            want = template_variables(self._defaults[key])
            problems = []
            if missing := sorted(want - got - OPTIONAL_VARIABLES.get(key, frozenset())):
                problems.append("missing variable(s) " + ", ".join("{" + m + "}" for m in missing))
            if unknown := sorted(got - want):
                problems.append("unknown variable(s) " + ", ".join("{" + u + "}" for u in unknown))
            if problems:
                raise PromptError(
                    f"prompt {key!r}: {'; '.join(problems)} (allowed: {', '.join(sorted(want)) or 'none'})"
                )
        return self

    def keys(self) -> list[str]:
        return sorted(self._templates)

    def get(self, key: str) -> str:
        try:
            return self._templates[key]
        except KeyError:
            raise PromptError(f"unknown prompt key {key!r}") from None

    def variables(self, key: str) -> set[str]:
        """The plain ``{name}`` fields of template ``key``; PromptError naming the key for any other field."""
        try:
            return template_variables(self.get(key))
        except PromptError as exc:
            raise PromptError(f"prompt {key!r}: {exc}") from None

    def render(self, key: str, **variables: object) -> str:
        """Fill a template. Values are inserted verbatim (braces in values are safe).

        Raises PromptError naming the key for any template fault, whatever the template holds.
        """
        template = self.get(key)
        needed = self.variables(key)
        if missing := needed - variables.keys():
            raise PromptError(f"prompt {key!r}: no value for {', '.join(sorted(missing))}")
        try:
            return template.format(**{k: variables[k] for k in needed})
        except (LookupError, AttributeError, TypeError, ValueError) as exc:
            raise PromptError(f"prompt {key!r}: cannot be rendered ({type(exc).__name__}: {exc})") from None
