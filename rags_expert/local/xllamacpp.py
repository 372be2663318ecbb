"""The default local runner: llama.cpp's own OpenAI-compatible server from the prebuilt ``xllamacpp`` wheel.

``xllamacpp`` (MIT, Xorbits) ships llama.cpp's C++ server in a manylinux wheel, so the ``local`` extra installs in
seconds with nothing to compile. :class:`rags_expert.local.server.LocalModelServer` runs this module as a child
process (``local.runner = "xllamacpp"``)::

    python -m rags_expert.local.xllamacpp --model M.gguf --host 127.0.0.1 --port 8123 --n-ctx 4096 \\
        --alias smollm2-135m-instruct --threads 1 --threads-batch 2 --cache-ram-mib 256

It serves the model on ``host:port`` (``GET /v1/models`` answers 503 while the model loads, then 200) until it gets
SIGTERM or SIGINT, then stops the server and exits 0. A model or port it cannot use ends it with exit 1 and
llama.cpp's own error lines on stderr; an ``xllamacpp`` that cannot be imported (not installed, or the OpenMP
runtime ``libgomp.so.1`` missing) with exit 3 and one line saying what to install.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

#: Exit status when ``xllamacpp`` cannot be imported (LocalModelServer shows it with the output's tail).
EXIT_NO_RUNNER = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line :func:`rags_expert.local.command.server_command` builds for this runner."""
    parser = argparse.ArgumentParser(prog="python -m rags_expert.local.xllamacpp", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file to serve")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, required=True, help="TCP port to listen on")
    parser.add_argument("--n-ctx", type=int, default=4096, help="context window in tokens")
    parser.add_argument("--alias", default="local", help="model name the server announces")
    parser.add_argument("--threads", type=int, default=0, help="threads generating tokens (0: llama.cpp's default)")
    parser.add_argument(
        "--threads-batch", type=int, default=0, help="threads reading the prompt (0: llama.cpp's default)"
    )
    parser.add_argument(
        "--cache-ram-mib", type=int, default=-2, help="RAM for earlier prompts' caches in MiB (-2: llama.cpp's default)"
    )
    parser.add_argument(
        "--parallel", type=int, default=1, help="slots decoding at once (1: one request at a time, as the agents ask)"
    )
    return parser.parse_args(argv)


def server_params(xlc: Any, args: argparse.Namespace) -> Any:
    """xllamacpp's ``CommonParams`` for ``args``: one slot (one request at a time), no web UI."""
    params = xlc.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = max(1, args.parallel)  # the agents send one request at a time (local.grading_concurrency = 1)
    if params.n_parallel > 1:
        params.kv_unified = True  # the slots share the whole context (a scoring batch of short prompts)
    params.model_alias = {args.alias}
    params.ui = False  # the agents need only the OpenAI API
    if args.threads > 0:
        params.cpuparams.n_threads = args.threads
    if args.threads_batch > 0:
        params.cpuparams_batch.n_threads = args.threads_batch
    if args.cache_ram_mib != -2:
        params.cache_ram_mib = args.cache_ram_mib
    return params


def import_xllamacpp() -> Any:
    """The ``xllamacpp`` module, or exit :data:`EXIT_NO_RUNNER` with one line saying what to install."""
    try:
        import xllamacpp
    except ImportError as exc:
        hint = "pip install 'rags-expert[local]'"
        if "libgomp" in str(exc):
            hint = "install the OpenMP runtime (Debian/Ubuntu: apt-get install libgomp1)"
        print(f"error: the xllamacpp runner cannot be loaded ({exc}): {hint}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_NO_RUNNER) from None
    return xllamacpp


def serve(args: argparse.Namespace) -> None:
    """Serve until SIGTERM/SIGINT; xllamacpp answers HTTP on its own threads while the main thread waits."""
    xlc = import_xllamacpp()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = xlc.Server(server_params(xlc, args))  # loads the model, then listens on host:port
    except RuntimeError as exc:  # llama.cpp printed why (model, port) just above
        print(f"error: the xllamacpp server did not start: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    stop.wait()
    del server  # stops the HTTP threads and frees the model


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m rags_expert.local.xllamacpp``."""
    serve(parse_args(argv))


if __name__ == "__main__":
    main()
