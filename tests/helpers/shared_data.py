"""The one locator of the test data that is not in this repository (BioChatter KG schemas, HotpotQA).

The data lives in ``../shared/data`` beside the checkout, or wherever ``RAGS_EXPERT_SHARED_DATA`` points
(the folder that holds ``biochatter/`` and ``hotpotqa/``). Every test and benchmark that reads it goes through
:func:`shared_data`; a test that needs a file skips, naming the file and the variable, when it is absent
(:func:`needs` as a marker, :func:`skip_unless` inside a test or fixture), so a fresh clone without the data
passes the test suite.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ENV = "RAGS_EXPERT_SHARED_DATA"
ROOT = Path(__file__).resolve().parents[2]


def shared_data() -> Path:
    """The shared data folder: ``$RAGS_EXPERT_SHARED_DATA``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get(ENV)
    return Path(env).expanduser() if env else ROOT.parent / "shared" / "data"


BIOCHATTER = shared_data() / "biochatter"
SCHEMA_FILE = BIOCHATTER / "kg_schema_data.yaml"
CASES_FILE = BIOCHATTER / "query_test_data.yaml"
SCHEMA_INFO_FILE = BIOCHATTER / "schema_info_example.yaml"
HOTPOTQA = shared_data() / "hotpotqa"
HOTPOTQA_DEV = HOTPOTQA / "dev.jsonl"


def missing_reason(path: Path, what: str) -> str | None:
    """Why a test that reads ``path`` cannot run (``what`` names the data), or None when the file is there."""
    if path.is_file():
        return None
    return (
        f"{what} not found at {path} (the shared test data: set {ENV} to the folder holding biochatter/ and hotpotqa/)"
    )


def needs(path: Path, what: str) -> Any:
    """A marker that skips the test, naming the missing file and ``RAGS_EXPERT_SHARED_DATA``, without ``path``."""
    import pytest  # here, not at the top: benchmarks import this module without the test extra

    reason = missing_reason(path, what)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def skip_unless(path: Path, what: str) -> None:
    """Skip the running test (or fixture) the same way when ``path`` is absent."""
    import pytest

    if reason := missing_reason(path, what):
        pytest.skip(reason)
