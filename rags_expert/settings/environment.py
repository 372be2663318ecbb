"""What the ``RAGS_EXPERT_*`` environment holds before any settings validate: which setting a variable names,
and which values are secrets (:class:`SecretBook`, shared by the CLI and the MCP server, masks them in all output)."""

from __future__ import annotations

import os
from typing import Any

from rags_expert.secrets import redact, url_secrets
from rags_expert.settings.agents import AgentSettings, KGExpertSettings, RagsExpertSettings

AGENT_SETTINGS: tuple[type[AgentSettings], ...] = (RagsExpertSettings, KGExpertSettings)


def field_annotation(path: list[str]) -> Any:
    """The annotation of the setting at ``path`` (e.g. ``["retrieval", "library_tags"]``) in either agent's
    settings, None if unknown."""
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
        if name == "OPENAI_API_KEY" or (name.startswith("RAGS_EXPERT_") and "SecretStr" in str(field_annotation(path))):
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
