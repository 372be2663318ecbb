"""Run ``rags-expert`` as a subprocess of the test, on this checkout, with a private data directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
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
    args: list[str], env: dict[str, str], cwd: Path = ROOT, timeout: float = 180, wrap: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    """``python -m rags_expert.cli ARGS`` (after the command ``wrap``, if any) with text output captured
    (``subprocess.TimeoutExpired`` after ``timeout`` seconds: a command that blocks fails its test)."""
    return subprocess.run(
        [*wrap, sys.executable, "-m", "rags_expert.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[tuple[list[str], str]]:
    """A ``wrap`` for :func:`run_cli` under which ``folder`` cannot be written, and the reason a write fails with.

    For another user than root, the folder's tree loses its write permissions (given back after). Root writes
    anyway, so for root the command runs in its own mount namespace where ``folder`` is mounted read-only
    (``unshare``); where that is not allowed, the test is skipped."""
    import pytest

    if os.geteuid() != 0:
        paths = [folder, *folder.rglob("*")]
        modes = {p: p.stat().st_mode for p in paths if not p.is_symlink()}
        for p, mode in modes.items():
            p.chmod(mode & 0o555)
        try:
            yield [], "permission denied"
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    wrap = ["unshare", "--mount", "sh", "-c", script, str(folder)]
    if shutil.which("unshare") is None or subprocess.run([*wrap, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root, and no read-only mount can be made here (unshare --mount)")
    yield wrap, "read-only file system"


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
