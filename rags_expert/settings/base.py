"""The base of every settings section."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

MAX_SECONDS = 86_400.0
"""Upper bound of every timeout setting (a day): far larger ones fail in C code (a socket timeout of 1e300 s is
"OverflowError: timestamp out of range"), and no request should wait longer."""
MAX_DELAY = 3_600.0
"""Upper bound of a retry delay (an hour)."""
MAX_REPLY_TOKENS = 1_000_000
"""Upper bound of an output-token cap sent to a model endpoint."""
MAX_CONTEXT_TOKENS = 1_048_576
"""Upper bound of the local model's context window and its token caps (they reach llama.cpp's C code)."""
MAX_THREADS = 1_024
"""Upper bound of a thread count handed to a native library."""


class SettingsSection(BaseModel):
    """The base of every settings section: a key the section does not have is an error, not ignored.

    A misspelt ``llm.modle`` (in code, a host's YAML or ``RAGS_EXPERT_LLM__MODLE``) fails validation with
    ``Extra inputs are not permitted`` at its path instead of leaving the default silently in place.
    Validation errors do not repeat the values given (a misspelt key may hold a secret).
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
