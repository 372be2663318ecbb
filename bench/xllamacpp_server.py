"""A ``llama-server`` stand-in built on the prebuilt ``xllamacpp`` wheel, for measuring it as a runner.

``xllamacpp`` (MIT, Xorbits) ships llama.cpp's own C++ server in a manylinux wheel, so nothing compiles
at install time. This script takes the ``llama-server`` arguments that
:func:`rags_expert.local_llm.server_command` passes for ``local.runner = "llama_server"`` (``-m``,
``--host``, ``--port``, ``-c``, ``--alias``, ``-t``, ``-tb``) and serves the model until it is terminated.
``bench/local_runner.py --xllamacpp-python PY`` runs it with an interpreter that has ``xllamacpp``
installed (it is not a dependency of this project).
"""

from __future__ import annotations

import argparse
import signal
import threading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", dest="model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-c", dest="n_ctx", type=int, default=4096)
    parser.add_argument("--alias", default="local")
    parser.add_argument("-t", dest="threads", type=int, default=0)
    parser.add_argument("-tb", dest="threads_batch", type=int, default=0)
    args = parser.parse_args()

    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1
    params.model_alias = {args.alias}
    if args.threads:
        params.cpuparams.n_threads = args.threads
    if args.threads_batch:
        params.cpuparams_batch.n_threads = args.threads_batch
    server = xlc.Server(params)  # serves HTTP on host:port until it is dropped
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server


if __name__ == "__main__":
    main()
