"""Answer-time authorization: the host's hook ``authorize(user, uids) -> allowed uids`` (docs/authorization.md).

Indexes filter by permissions as they were at ingestion; a chunk can be revoked after that. The host gives the
agent one hook, asked at answer time with the request's user (:class:`~rags_expert.rag.options.RequestOptions`
``user_id``; None for an anonymous request) and chunk uids (``sources[].uid``, :func:`~rags_expert.citations.chunk_id`);
it answers the uids that user may read. Three kinds, one :class:`Authorizer`:

* a callable passed as ``RagsExpert(authorize=...)``, sync (run, and its answer read, on a daemon thread of its own
  per call, so that a hook that hangs holds only that thread) or async;
* ``authorization.hook``: the same, named ``"package.module:function"`` in the settings;
* ``authorization.url``: an HTTP endpoint, ``POST {"user": ..., "uids": [...]}`` → ``{"allowed": [...]}``, with
  ``authorization.token`` as a bearer token.

A hook that raises, times out (``authorization.timeout``), answers an HTTP error or a malformed reply (anything
but an iterable of uids or a ``{uid: bool}`` mapping), or is asked while ``authorization.max_hung_calls`` of its
timed-out sync calls still run, raises :class:`AuthorizationError`, whose text names the hook kind and the fault's
class only (never the URL's credentials, the token or the reply): the graph fails closed. Uids a hook adds that it was not asked about are
ignored. Where the graph asks is :mod:`rags_expert.rag.wrappers.guard`.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import AsyncIterable, Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any

import httpx

from rags_expert.settings.authorization import AuthorizationSettings
from rags_expert.threads import in_daemon_thread

HookAnswer = Iterable[str] | Mapping[str, bool]
"""What a hook answers: the allowed uids (any iterable of str: list, set, generator), or ``{uid: allowed}``."""

AuthorizeHook = Callable[[str | None, list[str]], HookAnswer | Awaitable[HookAnswer] | AsyncIterable[str]]
"""The host's hook: ``(user, uids)`` → a :data:`HookAnswer`, sync or async (``async def``, or an async generator
of the allowed uids)."""


class AuthorizationError(RuntimeError):
    """The hook failed (raised, timed out, answered badly): nothing it was asked about is allowed."""


class AuthorizationConfigError(ValueError):
    """``authorization.hook`` names nothing callable (one line, raised when the agent starts)."""


class Authorizer:
    """One hook with its timeout: :meth:`allowed` asks it about a set of uids.

    A sync hook runs on a daemon thread of its own per call (:func:`~rags_expert.threads.in_daemon_thread`), where
    its answer is also read (a generator is consumed there), all within the timeout. A call past the timeout is
    denied and its thread left to end alone; while ``max_hung`` such threads still run, every check is denied at
    once (fail closed, no new thread)."""

    def __init__(self, hook: AuthorizeHook, timeout: float, kind: str = "callable", max_hung: int = 16) -> None:
        self.hook = hook
        self.timeout = timeout
        self.kind = kind
        self.max_hung = max_hung
        self.hung = 0
        """Sync calls whose caller stopped waiting (a timeout, a cancelled question) and that still run."""
        self._lock = threading.Lock()
        self._is_async = any(
            inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f) for f in (hook, type(hook).__call__)
        )

    async def allowed(self, user: str | None, uids: Iterable[str]) -> set[str]:
        """The uids among ``uids`` that ``user`` may read; raises :class:`AuthorizationError` on any fault."""
        asked = list(dict.fromkeys(uids))
        if not asked:
            return set()
        try:
            async with asyncio.timeout(self.timeout):
                answer = self.hook(user, asked) if self._is_async else await self._in_thread(user, asked)
                allowed = await _settle(answer)
        except AuthorizationError:
            raise
        except Exception as exc:  # noqa: BLE001 - any fault of the host's hook denies
            raise AuthorizationError(f"the {self.kind} authorization hook failed ({_fault(exc)})") from None
        return allowed & set(asked)

    async def _in_thread(self, user: str | None, uids: list[str]) -> Any:
        """Call the sync hook and read its answer on a daemon thread (an awaitable it returns comes back as is)."""
        with self._lock:
            if self.hung >= self.max_hung:
                raise AuthorizationError(
                    f"the {self.kind} authorization hook failed ({self.hung} earlier calls still running)"
                )
        state = {"running": True, "abandoned": False}

        def call() -> Any:
            try:
                answer = self.hook(user, uids)
                return answer if inspect.isawaitable(answer) or isinstance(answer, AsyncIterable) else _uids(answer)
            finally:
                with self._lock:
                    state["running"] = False
                    if state["abandoned"]:
                        self.hung -= 1

        try:
            return await in_daemon_thread(call, name="rags-expert-authorize")
        except asyncio.CancelledError:
            with self._lock:
                if state["running"]:
                    state["abandoned"] = True
                    self.hung += 1
            raise

    async def revoked(self, user: str | None, uids: Collection[str]) -> set[str]:
        """The uids among ``uids`` that ``user`` may not read (all of them when the hook fails)."""
        try:
            return set(uids) - await self.allowed(user, uids)
        except AuthorizationError:
            return set(uids)


async def _settle(answer: Any) -> set[str]:
    """An answer as uids, on the loop (within the caller's timeout): awaited, an async iterable read to its end."""
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, AsyncIterable):
        answer = [uid async for uid in answer]
    return _uids(answer)


def _fault(exc: BaseException) -> str:
    """A fault in words without its message (which might quote a URL or a reply)."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


def _uids(answer: Any) -> set[str]:
    """The hook's answer as a set of uids: a ``{uid: bool}`` mapping (its True keys) or any other iterable of
    strings. Anything else is a fault (a mapping is never read as its keys: ``{uid: False}`` allows nothing)."""
    if isinstance(answer, Mapping):
        if not all(isinstance(uid, str) and isinstance(ok, bool) for uid, ok in answer.items()):
            raise TypeError("a mapping from the hook must map uids to True or False")
        return {uid for uid, ok in answer.items() if ok}
    if isinstance(answer, str | bytes) or not isinstance(answer, Iterable):
        raise TypeError("the hook must return an iterable of uids")
    out = set()
    for uid in answer:
        if not isinstance(uid, str):
            raise TypeError("the hook must return uids as strings")
        out.add(uid)
    return out


class HttpHook:
    """The ``authorization.url`` hook: one POST per call (a client per call, so any event loop may use it)."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def __call__(self, user: str | None, uids: list[str]) -> list[str]:
        """POST ``{"user", "uids"}``; the reply's ``allowed`` list (an HTTP error raises)."""
        async with httpx.AsyncClient(trust_env=False) as client:
            reply = await client.post(self.url, json={"user": user, "uids": uids}, headers=self.headers)
            reply.raise_for_status()
            body = reply.json()
        if not isinstance(body, dict) or not isinstance(body.get("allowed"), list):
            raise ValueError("the reply has no allowed list")
        return body["allowed"]


def import_hook(path: str) -> AuthorizeHook:
    """The callable ``"package.module:function"`` names; :class:`AuthorizationConfigError` if none."""
    module_name, _, attr = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise AuthorizationConfigError(
            f"authorization.hook={path!r} cannot be imported ({type(exc).__name__}: {exc})"
        ) from None
    if not callable(target):
        raise AuthorizationConfigError(f"authorization.hook={path!r} is not callable")
    return target  # type: ignore[no-any-return]


def build_authorizer(settings: AuthorizationSettings, hook: AuthorizeHook | None = None) -> Authorizer | None:
    """The agent's authorizer: the host's callable, else the settings' import path or URL, else None (off)."""
    if hook is not None:
        return Authorizer(hook, settings.timeout, "callable", settings.max_hung_calls)
    if settings.hook is not None:
        return Authorizer(import_hook(settings.hook), settings.timeout, "import-path", settings.max_hung_calls)
    if settings.url is not None:
        token = settings.token.get_secret_value() if settings.token else None
        return Authorizer(HttpHook(settings.url, token), settings.timeout, "HTTP")
    return None
