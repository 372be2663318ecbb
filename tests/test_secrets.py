"""No credential ever reaches the CLI's output: not in any library's log records, not in errors, not at DEBUG.

The end-to-end tests run ``rags-expert`` as a subprocess against a real HTTP server on
127.0.0.1 that answers 401 with a body echoing every credential it received: the
``Authorization`` header, the decoded Basic ``user:password``, the request URL rebuilt
with them, and the API key.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli

from rags_expert.llm.chat import redact as llm_redact
from rags_expert.secrets import RedactingFilter, install_log_redaction, redact, url_secrets
from rags_expert.settings import KGExpertSettings, RagsExpertSettings
from rags_expert.settings.environment import env_secrets

USER, PASSWORD, API_KEY, KF_TOKEN = "user", "s3cr3t-pw", "sk-echo-test-key-0123456789", "kf-token-abcdef123"
B64 = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
FORBIDDEN = [PASSWORD, B64, B64.rstrip("="), f"{USER}:{PASSWORD}", API_KEY, f"Basic {B64}", KF_TOKEN]


# --- redact() and url_secrets() ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"POST http://{USER}:{PASSWORD}@127.0.0.1:8080/v1/chat/completions",
        f"Authorization: Basic {B64}",
        f'{{"authorization": "Basic {B64}", "x": 1}}',
        f"headers=[(b'authorization', b'Basic {B64}')]",
        f"{{'Authorization': 'Bearer {API_KEY}'}}",
        f"the server said: Basic {B64}",
        f"Proxy-Authorization=Basic {B64}",
    ],
)
def test_redact_masks_every_credential_form_without_being_told_the_values(text):
    out = redact(text)
    assert all(secret not in out for secret in FORBIDDEN), out
    assert "***" in out


def test_redact_masks_url_userinfo_entirely_and_keeps_the_rest():
    assert redact("see https://tok3n@github.com/x and http://u:p%40ss@h:1/v1?a=b") == (
        "see https://***@github.com/x and http://***@h:1/v1?a=b"
    )


def test_redact_leaves_prose_and_plain_urls_alone():
    text = "The basic principle: see http://example.com/a@b and mail a@b.c; authorization header missing"
    assert redact(text) == text


def test_redact_literal_secrets_longest_first():
    assert redact("key abcdef and abcdefgh", ["abcdef", "abcdefgh"]) == "key *** and ***"
    assert llm_redact is redact  # the old import path keeps working


def test_url_secrets_lists_the_wire_forms_of_url_credentials():
    forms = url_secrets(f"http://{USER}:{PASSWORD}@host/v1")
    assert {PASSWORD, f"{USER}:{PASSWORD}", B64, B64.rstrip("=")} <= set(forms)
    assert url_secrets("http://host/v1") == [] and url_secrets(None) == []
    decoded = url_secrets("http://me:p%40ss@host")
    assert "p@ss" in decoded and base64.b64encode(b"me:p@ss").decode() in decoded


def test_settings_secrets_cover_every_configured_credential(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://envuser:env-pass-123@proxy/v1")
    llm = {"base_url": f"http://{USER}:{PASSWORD}@127.0.0.1/v1", "api_key": API_KEY}
    store = {"api_key": "qdrant-key-1", "url": "http://q:qdrant-url-pass@q:6333"}
    embeddings = {"base_url": "http://e:emb-pass-1@e/v1", "api_key": "emb-key-1"}
    settings = RagsExpertSettings(
        llm=llm,
        store=store,
        embeddings=embeddings,
        knowledge_flow={"token": KF_TOKEN, "base_url": "http://kf:kf-url-pass@kf/v1"},
    )
    common = {PASSWORD, B64, API_KEY, "qdrant-key-1", "qdrant-url-pass", "emb-pass-1", "emb-key-1", "env-pass-123"}
    assert common | {KF_TOKEN, "kf-url-pass"} <= set(settings.secrets())
    kg = KGExpertSettings(
        llm=llm,
        store=store,
        embeddings=embeddings,
        kg={
            "neo4j_password": "neo-pass-1",
            "falkordb_password": "falkor-pass-1",
            "neo4j_uri": "bolt://neo:neo-uri-pass@db:7687",
        },
    )
    assert common | {"neo-pass-1", "falkor-pass-1", "neo-uri-pass"} <= set(kg.secrets())


def test_env_secrets_are_known_before_the_settings_validate(monkeypatch):
    monkeypatch.setenv("RAGS_EXPERT_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("RAGS_EXPERT_KNOWLEDGE_FLOW__TOKEN", "kf-token-new-name")
    monkeypatch.setenv("RAGS_EXPERT_KG__NEO4J_PASSWORD", "neo-env-pass")
    monkeypatch.setenv("RAGS_EXPERT_LLM__BASE_URL", f"http://{USER}:{PASSWORD}@127.0.0.1/v1")
    monkeypatch.setenv("RAGS_EXPERT_LLM__MAX_TOKENS", "1024")  # a number, not a secret, though named *TOKENS
    monkeypatch.setenv("RAGS_EXPERT_RETRIEVAL__TOP_K", "banana")  # the settings do not validate
    found = env_secrets()
    assert {API_KEY, "kf-token-new-name", "neo-env-pass", PASSWORD, B64} <= set(found)
    assert "1024" not in found


# --- the log filter ------------------------------------------------------------------------------


def test_filter_on_a_handler_redacts_records_of_any_logger_with_args_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logger = logging.getLogger("test_secrets.isolated")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        install_log_redaction(lambda: [API_KEY], logger)
        logging.getLogger("test_secrets.isolated.httpx").warning(
            "HTTP Request: %s %r", f"http://{USER}:{PASSWORD}@h/v1", {"authorization": f"Basic {B64}"}
        )
        try:
            raise RuntimeError(f"server echoed {API_KEY} and Basic {B64}")
        except RuntimeError:
            logger.exception("failed")
        logger.info("stack", stack_info=True, extra={})
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert "HTTP Request: POST" not in out  # the message was formatted with its args, then redacted
    assert "http://***@h/v1" in out and "RuntimeError: server echoed *** and Basic ***" in out
    assert all(secret not in out for secret in FORBIDDEN), out
    assert [f for f in handler.filters if isinstance(f, RedactingFilter)]


# --- end to end: the CLI against a server that echoes credentials ---------------------------------


class _EchoHandler(BaseHTTPRequestHandler):
    """Answers every request 401 with a JSON body that repeats the credentials it was sent."""

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        auth = self.headers.get("Authorization", "")
        decoded = ""
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth[6:]).decode()
        host = self.headers.get("Host")
        message = (
            f"invalid credentials: Authorization: {auth}; decoded {decoded}; "
            f"url http://{decoded}@{host}{self.path}; key {auth.removeprefix('Bearer ')}"
        )
        body = json.dumps({"error": {"message": message, "authorization": auth, "type": "invalid_request_error"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = do_POST


@pytest.fixture(scope="module")
def echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    """A data dir with a one-document knowledge base, ingested through the CLI."""
    return ingest_docs(
        tmp_path_factory.mktemp("secrets_kb"),
        {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("userinfo", [f"{USER}:{PASSWORD}@", ""], ids=["basic-in-url", "bearer-key"])
@pytest.mark.parametrize("flags", [["-vv"], ["-v"], [], ["-vv", "--json"]], ids=["debug", "info", "quiet", "json"])
def test_ask_never_prints_echoed_credentials(kb_dir, echo_server, userinfo, flags):
    env = cli_env(
        kb_dir,
        RAGS_EXPERT_LLM__BASE_URL=f"http://{userinfo}127.0.0.1:{echo_server}/v1",
        RAGS_EXPERT_LLM__API_KEY=API_KEY,
        RAGS_EXPERT_KNOWLEDGE_FLOW__TOKEN=KF_TOKEN,
    )
    verbose = [f for f in flags if f.startswith("-v")]
    done = run_cli([*verbose, "ask", "When was Castle Varen built?", *[f for f in flags if f not in verbose]], env)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output  # the model failed: an error, not "not found"
    assert "AuthenticationError" in output
    assert "invalid credentials: Authorization: ***" in output  # the echo did reach the output, masked
    assert all(secret not in output for secret in FORBIDDEN), output
    assert "Traceback" not in output
    if "-vv" in flags:
        assert "DEBUG" in output and "httpcore" in output  # third-party DEBUG records were on, and filtered
