"""Run ``rags-expert`` as a subprocess of the test, on this checkout, with a private data directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``rags-expert`` subprocess: this checkout, a private data dir, fast embeddings,
    no lesson memory, no model retries, and none of the caller's ``RAGS_EXPERT_*``/``OPENAI_*`` variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        RAGS_EXPERT_DATA_DIR=str(data_dir),
        RAGS_EXPERT_LESSONS__ENABLED="false",
        RAGS_EXPERT_EMBEDDINGS__PROVIDER="wordllama",
        RAGS_EXPERT_LLM__MAX_RETRIES="0",
        **extra,
    )
    return env


def run_cli(
    args: list[str], env: dict[str, str], cwd: Path = ROOT, timeout: float = 180
) -> subprocess.CompletedProcess:
    """``python -m rags_expert.cli ARGS`` with text output captured (``subprocess.TimeoutExpired`` after
    ``timeout`` seconds: a command that blocks fails its test)."""
    return subprocess.run(
        [sys.executable, "-m", "rags_expert.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def ingest_docs(root: Path, files: dict[str, str | bytes], env: dict[str, str] | None = None) -> Path:
    """Write ``files`` (text, or the bytes of a binary format) under ``root/docs``, ingest them through the CLI into
    ``root/data`` (with ``env``, else :func:`cli_env`'s) and return that data dir."""
    docs = root / "docs"
    docs.mkdir()
    for name, text in files.items():
        if isinstance(text, bytes):
            (docs / name).write_bytes(text)
        else:
            (docs / name).write_text(text)
    done = run_cli(["ingest", str(docs), "-q"], env or cli_env(root / "data"))
    assert done.returncode == 0, done.stderr
    return root / "data"


def default_model_env(root: Path, files: dict[str, str | bytes]) -> dict[str, str]:
    """The environment of a knowledge base of ``files`` under ``root``, ingested and asked with the default
    embedding model, as a user has it (not :func:`cli_env`'s fast one)."""
    env = cli_env(root / "data")
    del env["RAGS_EXPERT_EMBEDDINGS__PROVIDER"]
    ingest_docs(root, files, env)
    return env
