"""Keeps ``pytest -m "not slow"`` fast: a test that starts a process and is not marked ``slow`` fails.

Starting a process (the CLI, a server, ``python -c``) costs seconds of interpreter start-up and imports on 2 cores,
so every such test carries ``pytest.mark.slow``. Processes are seen through Python's audit hooks (the
``subprocess.Popen`` and ``os.posix_spawn`` events, which asyncio's and anyio's subprocesses raise too) while a test
and its function-scoped fixtures run; servers that a session- or module-scoped fixture starts once (PostgreSQL,
FalkorDB) are shared set-up, not the test's own cost, and are not counted."""

from __future__ import annotations

import platform
import sys
from collections.abc import Generator
from typing import Any

import pytest

SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system", "os.exec"})


class _Watch:
    """The processes started while an unmarked test runs; ``None`` when nothing is watched."""

    started: list[str] | None = None
    shared_setup = 0  # > 0 while a session/module/class fixture is being set up


def _command(args: tuple[Any, ...]) -> str:
    """The program and its first two arguments (never its environment, nor later arguments: they may hold
    secrets)."""
    argv = args[1] if len(args) > 1 else args[0]
    if isinstance(argv, bytes):
        argv = argv.decode(errors="replace")
    if isinstance(argv, str):
        argv = argv.split()
    words = [w.decode(errors="replace") if isinstance(w, bytes) else str(w) for w in list(argv or [])[:3]]
    return " ".join(words) or str(args[0])


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: note a spawn while an unmarked test runs."""
    if event in SPAWN_EVENTS and _Watch.started is not None and not _Watch.shared_setup:
        _Watch.started.append(_command(args))


platform.processor()  # cached now: its first call runs `uname -p`, which would count against whichever test asked first
sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    """Shared fixtures (broader than one test) may start their servers."""
    shared = fixturedef.scope != "function"
    _Watch.shared_setup += shared
    try:
        return (yield)
    finally:
        _Watch.shared_setup -= shared


def _watched_phase(item: pytest.Item) -> Generator[None, Any, Any]:
    """Run one phase of ``item``; fail it if it started a process without the ``slow`` marker."""
    slow = item.get_closest_marker("slow") is not None
    outer, _Watch.started = _Watch.started, None if slow else []  # a pytest run inside a test (pytester) has its own
    try:
        result = yield
    finally:
        started, _Watch.started = _Watch.started, outer
    if started:
        pytest.fail(
            f"{item.nodeid} starts a process ({started[0]}) but is not marked slow: "
            'add pytest.mark.slow so that `pytest -m "not slow"` stays the fast inner loop',
            pytrace=False,
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    """Watch the function-scoped fixtures."""
    return (yield from _watched_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Watch the test itself."""
    return (yield from _watched_phase(item))
