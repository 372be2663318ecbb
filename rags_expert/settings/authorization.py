"""The ``authorization`` section: the host's answer-time permission check (docs/authorization.md)."""

from __future__ import annotations

import re

from pydantic import Field, SecretStr, field_validator, model_validator

from rags_expert.settings.base import MAX_SECONDS, SettingsSection

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class AuthorizationSettings(SettingsSection):
    """Who may read which chunk, asked of the host at answer time: ``authorize(user, uids) -> allowed uids``.

    The hook is a Python function (``hook``, or a callable passed as ``RagsExpert(authorize=...)``) or an HTTP
    endpoint (``url``). It runs on every retrieved chunk before grading, on the context before each answer
    call, on every cited chunk just before the answer is given, on recalled lessons and on the history a
    follow-up is condensed against. A fault or a timeout denies (fail closed). Off unless configured.
    """

    hook: str | None = Field(
        None,
        description='A Python function "package.module:function" taking (user, uids) and returning the allowed '
        "uids (sync or async). None: no import-path hook.",
    )
    url: str | None = Field(
        None,
        description='An HTTP endpoint: POST {"user": ..., "uids": [...]} answered with {"allowed": [...]}. '
        "None: no HTTP hook.",
    )
    token: SecretStr | None = Field(
        None,
        description="HTTP hook: a bearer token sent as Authorization: Bearer TOKEN (never logged). None: none.",
    )
    timeout: float = Field(
        2.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds one authorization call may take (either hook); past it the chunks are denied.",
    )
    max_hung_calls: int = Field(
        16,
        ge=1,
        le=10_000,
        description="Sync hooks: each call runs on a daemon thread of its own, left to end alone when it times "
        "out. While this many timed-out calls still run, every check is denied at once (no new thread).",
    )

    @field_validator("hook")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        if value is not None and not _IMPORT_PATH.match(value):
            raise ValueError('must be "package.module:function"')
        return value

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _one_hook(self) -> AuthorizationSettings:
        if self.hook is not None and self.url is not None:
            raise ValueError("set authorization.hook or authorization.url, not both")
        return self

    @property
    def enabled(self) -> bool:
        """Whether a hook is configured in the settings (a callable passed to the agent counts too)."""
        return self.hook is not None or self.url is not None
