"""``rags-expert search`` and ``ask`` as subprocesses with ``retrieval.backend=knowledge_flow`` (local service)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.kf_service import KnowledgeFlowService
from helpers.openai_server import OpenAIServer, request_kind, tag_content

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def service():
    with KnowledgeFlowService("v1") as s:
        yield s


def rags_expert(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh process configured for the knowledge-flow service at ``url``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGS_EXPERT_RETRIEVAL__BACKEND": "knowledge_flow",
        "RAGS_EXPERT_KNOWLEDGE_FLOW__BASE_URL": url,
        "RAGS_EXPERT_KNOWLEDGE_FLOW__RETRY_BASE_DELAY": "0.05",
    }
    return subprocess.run(
        [sys.executable, "-m", "rags_expert.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )


def test_search_uses_the_configured_knowledge_flow_service(service):
    done = rags_expert(service.url, "search", "security policy passwords", "-k", "2", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert [(h["title"], h["source"]) for h in hits] == [("security_policy.md", "security_policy.md")] * 2
    assert "rotated every 90 days" in hits[0]["content"]
    assert service.bodies()[-1]["query"] == "security policy passwords"  # it asked the service, not Qdrant
    plain = rags_expert(service.url, "search", "backup policy", "-k", "1", "--tags", "tag-ops")
    assert plain.returncode == 0 and "Unknown" not in plain.stdout
    assert plain.stdout.startswith("1. [") and "backup.md — backup.md" in plain.stdout
    assert service.bodies()[-1]["tags"] == ["tag-ops"]


def test_search_with_an_unknown_tag_is_a_one_line_error(service):
    done = rags_expert(service.url, "search", "security policy", "--tags", "Security")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    retry = "WARNING knowledge-flow HTTP 500 (attempt 1), retrying in 0.05s"
    assert "Traceback" not in done.stderr and lines[:-1] == [retry], done.stderr
    error = lines[-1]
    assert error.startswith("error: knowledge-flow ") and "HTTP 500 after 2 attempts" in error
    assert "'Internal Server Error'" in error and "tags ['Security']" in error
    assert "tag ids, not tag names" in error


def _model(body):
    kind = request_kind(body)
    if kind == "relevance":
        return {"relevant": "rotated" in tag_content(body, "chunk")}
    if kind in ("grounded", "useful"):
        return {kind: True}
    return "Passwords are rotated every 90 days [1]."


def test_ask_prints_file_names_as_sources(service):
    with OpenAIServer(_model) as model:
        done = rags_expert(service.url, "ask", "How often are passwords rotated?", "--base-url", model.base_url, "-q")
        as_json = rags_expert(
            service.url, "ask", "How often are passwords rotated?", "--base-url", model.base_url, "--json"
        )
    assert done.returncode == 0, done.stderr
    assert "[1] security_policy.md (security_policy.md)" in done.stdout and "Unknown" not in done.stdout
    sources = json.loads(as_json.stdout)["sources"]
    assert [(s["title"], s["source"]) for s in sources] == [("security_policy.md", "security_policy.md")]
