"""Blocking calls of code we do not control, off the event loop, on daemon threads of their own.

``asyncio.to_thread`` runs a call on the loop's default executor: a call that never returns keeps one of its few
threads for good (later calls queue behind it and never start), ``asyncio.run`` waits for it when its loop ends,
and the interpreter waits for it at exit. :func:`in_daemon_thread` starts a daemon thread per call instead (about
0.1 ms): cancelling the await (a timeout) abandons the call, which then holds only its own thread, keeps no
process alive and delays no loop's shutdown. Used for the host's sync authorization hook and for blocking HTTP
calls to rerankers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[..., T], *args: Any, name: str = "rags-expert-call") -> T:
    """``fn(*args)`` on a new daemon thread, with this task's context variables (as ``asyncio.to_thread``).

    Its result or exception is this coroutine's; cancelled, it stops waiting and leaves the thread to finish
    alone (its result is dropped, even when the loop has closed meanwhile)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # cancelled: nobody waits for it
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value if not isinstance(value, StopIteration) else RuntimeError("StopIteration"))

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(fn, *args))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as it is
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for it
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
