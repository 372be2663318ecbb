"""The base of every settings section."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """The base of every settings section: a key the section does not have is an error, not ignored.

    A misspelt ``llm.modle`` (in code, a host's YAML or ``RAGS_EXPERT_LLM__MODLE``) fails validation with
    ``Extra inputs are not permitted`` at its path instead of leaving the default silently in place.
    Validation errors do not repeat the values given (a misspelt key may hold a secret).
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
