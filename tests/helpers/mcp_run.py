"""``rags-expert mcp`` as a subprocess of the MCP tests: the HTTP server (ready once its line names the URL), the
text of a tool result, and a knowledge base ingested through the CLI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_run import ROOT


def text_of(result: Any) -> str:
    """The text content of a tool result."""
    return "\n".join(block.text for block in result.content if block.type == "text")


class HttpServer:
    """``rags-expert [-v...] mcp --http --port 0 FLAGS`` as a subprocess; ``url`` once its ready line names the
    port. ``verbosity``: the number of ``-v`` (2: DEBUG records of every library on stderr)."""

    def __init__(self, env: dict[str, str], log: Path, *flags: str, verbosity: int = 0) -> None:
        self.log = log
        verbose = ["-" + "v" * verbosity] if verbosity else []
        with log.open("w") as err:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rags_expert.cli", *verbose, "mcp", "--http", "--port", "0", *flags],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        self.url = self._wait_ready()

    def _wait_ready(self, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := re.search(r"at (http://\S+/mcp)", self.log.read_text()):
                return found.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"rags-expert mcp --http did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> int:
        """SIGTERM (a graceful stop), then the exit status."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode
