"""Secret scrubbing for every text that leaves the process: logs, events, exceptions, reports.

* :func:`redact` replaces known secret values and credential-shaped text with ``***``:
  URL userinfo (``scheme://user:pass@`` → ``scheme://***@``), ``Authorization`` header
  values in any notation (``Authorization: Basic …``, ``"authorization": "Bearer …"``,
  ``(b'authorization', b'…')``), standalone ``Bearer``/``Basic`` credentials,
  ``sk-…`` keys, ``api_key=…`` assignments and ``password=…`` (libpq conninfo strings).
* :func:`mask_values` replaces only the given secret values (for model replies inside a run, where
  credential-*shaped* text may be the documentation's own example); :func:`redact_data` redacts every
  string of JSON-like data (a final message's metadata, a tool's structured result).
* :func:`url_secrets` lists the forms a URL's credentials take on the wire (the
  password, ``user:password``, and its base64 as sent in ``Authorization: Basic``).
* :class:`RedactingFilter` is a :class:`logging.Filter` for *handlers*: installed on the
  root handlers (:func:`install_log_redaction`), it scrubs every record of every
  logger (httpx, httpcore, openai, langchain...), its arguments, traceback and stack.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_SECRET_CHARS = 4
"""Shorter configured values are not replaced literally (they would mangle ordinary text)."""

_AUTH_HEADER = re.compile(
    r"""(?ix)
    (\b(?:proxy-)?authorization\b['"]?\s*(?:[:=,]|=>)\s*(?:b?['"])?)  # Authorization: | "authorization": " | (b'authorization', b'
    (?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?       # the scheme, masked with the value
    [^\s'",}\])]+                                                # the credential
    """
)
_BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._\-~+/=]{6,}")
_BASIC = re.compile(r"(?i)(\bbasic\s+)([A-Za-z0-9+/_\-]{4,}={0,2})")
_SK_KEY = re.compile(r"sk-[A-Za-z0-9_\-*]{6,}")
_API_KEY = re.compile(r"(?i)(api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{4,}")
_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*['\"]?)[^\s'\"]{2,}")
# the scheme's last 32 characters at most: an unbounded scheme tried from every letter of a long "a.b.c…" run was
# quadratic; the userinfo after "://" is masked all the same
_URL_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,31}://)[^/\s@?#'\"<>]+@")


def _basic_credentials(match: re.Match[str]) -> str:
    """Mask a ``Basic <token>`` whose token is base64 of ``user:password`` (prose like "basic facts" stays)."""
    token = match.group(2)
    try:
        decoded = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None, validate=True
        )
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + MASK if b":" in decoded else match.group(0)


def _mask_tail(match: re.Match[str]) -> str:
    """Keep the pattern's first group (the label), mask the rest."""
    return (match.group(1) if match.lastindex else "") + MASK


def mask_values(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each given secret value (of at least :data:`MIN_SECRET_CHARS`) replaced by ``***``,
    longest first."""
    text = str(text)
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the given secret values and every credential-shaped token replaced by ``***``."""
    text = mask_values(text, secrets)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    text = _AUTH_HEADER.sub(_mask_tail, text)
    text = _BEARER.sub(_mask_tail, text)
    text = _BASIC.sub(_basic_credentials, text)
    text = _SK_KEY.sub(MASK, text)
    text = _PASSWORD.sub(_mask_tail, text)
    return _API_KEY.sub(_mask_tail, text)


def redact_data(value: Any, scrub: Callable[[str], str]) -> Any:
    """``value`` (JSON-like data: dicts, lists, strings, numbers) with every string, keys kept, passed
    through ``scrub`` (e.g. ``lambda t: redact(t, secrets)``)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {k: redact_data(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v, scrub) for v in value]
    return value


def redact_message(message: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of a LangChain message as hosts may show it: secrets and credential-shaped tokens masked in its
    content and in every string of its ``response_metadata`` (what the graphs' final messages carry)."""
    values = list(secrets)

    def scrub(text: str) -> str:
        return redact(text, values)

    update = {"content": redact_data(message.content, scrub)}
    if hasattr(message, "response_metadata"):
        update["response_metadata"] = redact_data(message.response_metadata, scrub)
    return message.model_copy(update=update)


def url_secrets(url: str | None) -> list[str]:
    """The secret forms of a URL's userinfo: password (raw and percent-decoded), ``user:password``
    and its base64 (standard and URL-safe, with and without padding) as sent by HTTP Basic auth."""
    if not url or "@" not in url:
        return []
    try:
        parts = urlsplit(url if "://" in url else f"//{url}")
        user, password = parts.username, parts.password
    except ValueError:
        return []
    out: list[str] = []
    for u, p in {(user or "", password or ""), (unquote(user or ""), unquote(password or ""))}:
        if not (u or p):
            continue
        pair = f"{u}:{p}"
        out += [p, pair] if p else [u]  # a lone userinfo (https://TOKEN@host) is the credential
        raw = pair.encode()
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            out += [encoded.decode(), encoded.decode().rstrip("=")]
    return [s for s in dict.fromkeys(out) if s]


class RedactingFilter(logging.Filter):
    """Scrubs each record passing a handler: message with its arguments, traceback and stack.

    ``secrets`` is a list, or a callable returning one (read on every record, so values
    configured after the filter was installed are covered too).
    """

    def __init__(self, secrets: Iterable[str] | Callable[[], Iterable[str]] = ()) -> None:
        super().__init__()
        self._secrets = secrets

    def secrets(self) -> list[str]:
        """The literal values to mask now."""
        source = self._secrets() if callable(self._secrets) else self._secrets
        return list(source)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place (formatted message, no args); never drop it."""
        secrets = self.secrets()
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep what can be shown
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message, secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        return True


def install_log_redaction(
    secrets: Iterable[str] | Callable[[], Iterable[str]] = (), logger: logging.Logger | None = None
) -> RedactingFilter:
    """Put one :class:`RedactingFilter` on every handler of ``logger`` (default: the root logger and every
    logger that already has handlers of its own)."""
    if logger is not None:
        loggers = [logger]
    else:
        known = logging.Logger.manager.loggerDict.values()
        loggers = [logging.getLogger(), *(lg for lg in known if isinstance(lg, logging.Logger))]
    filt = RedactingFilter(secrets)
    for handler in {h for lg in loggers for h in lg.handlers}:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(filt)
    return filt


__all__ = [
    "MASK",
    "RedactingFilter",
    "install_log_redaction",
    "mask_values",
    "redact",
    "redact_data",
    "redact_message",
    "url_secrets",
]
