"""A model that repeats the configured credentials cannot make any surface show them.

The scripted OpenAI-compatible server (real HTTP on 127.0.0.1) answers with the API key, the password of the
``llm.base_url`` credentials and their Basic-auth token, and its grader quotes them in its feedback. The CLI
(text and ``--json``, progress lines), ``ainvoke``'s final message and every ``astream`` event must show
``***`` instead; the MCP server already did (tests/hosts/test_mcp_server.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.documents import KeywordRetriever, make_docs
from helpers.openai_server import OpenAIServer, castle_script, request_kind
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.llm.chat import build_chat_model
from rags_expert.settings import RagsExpertSettings

USER, PASSWORD = "reader", "pw-Ohm3-quartz"
API_KEY = "house-key-0123456789"  # not key-shaped: only the configured value can mask it
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = [API_KEY, PASSWORD, TOKEN, TOKEN.rstrip("=")]
LEAKY_ANSWER = (
    f"Castle Varen was built in 1412 [1]. (Configured with key {API_KEY}, password {PASSWORD}, basic token {TOKEN}.)"
)


def leaky_script(rejections: int = 0) -> Any:
    """``castle_script`` whose answers repeat the credentials; the first ``rejections`` groundedness grades
    reject the answer quoting them (so a rejection event and a progress line carry them too)."""
    left = [rejections]

    def script(body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        if kind == "grounded" and left[0] > 0:
            left[0] -= 1
            return {"grounded": False, "unsupported": f"the key {API_KEY} and the token {TOKEN}"}
        return LEAKY_ANSWER if kind == "answer" else castle_script(body)

    return script


def assert_masked(text: str) -> None:
    assert all(secret not in text for secret in SECRETS), text
    assert "***" in text  # the leaked values did reach the output, masked


# --- the CLI (a subprocess) --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    return ingest_docs(
        tmp_path_factory.mktemp("shown_secrets"),
        {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--json"], ["-q"]], ids=["text", "json", "quiet"])
def test_ask_masks_credentials_the_model_repeats(kb_dir, flags):
    with OpenAIServer(leaky_script(rejections=1)) as server:
        base_url = server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")
        env = cli_env(kb_dir, RAGS_EXPERT_LLM__BASE_URL=base_url, RAGS_EXPERT_LLM__API_KEY=API_KEY)
        done = run_cli(["ask", "When was Castle Varen built?", *flags], env)
    assert done.returncode == 0, done.stderr
    assert_masked(done.stdout)
    assert all(secret not in done.stderr for secret in SECRETS), done.stderr
    assert "Castle Varen was built in 1412 [1]." in done.stdout
    if flags == ["--json"]:
        shown = json.loads(done.stdout)
        assert shown["outcome"] == "success" and "***" in shown["answer"]
    if not flags:  # the progress line quoting the rejected draft's feedback
        assert "[draft rejected: not grounded: the key *** and the token ***]" in done.stderr.splitlines()


# --- the graph: ainvoke and astream --------------------------------------------------------------------


async def http_agent(server: OpenAIServer) -> RagsExpert:
    base_url = server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")
    settings = RagsExpertSettings(llm={"base_url": base_url, "api_key": API_KEY, "max_retries": 0})
    docs = make_docs({"castle": "Castle Varen was built in 1412 by Duke Albrecht on the river Mura."})
    agent = RagsExpert(settings, chat_model=build_chat_model(settings.llm), retriever=KeywordRetriever(docs=docs))
    return await agent.async_init()


async def test_ainvoke_final_message_masks_credentials_the_model_repeats():
    with OpenAIServer(leaky_script()) as server:
        agent = await http_agent(server)
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "a"}}
        )
    final = out["messages"][-1]
    assert final.response_metadata["outcome"] == "success"
    assert final.content.startswith("Castle Varen was built in 1412 [1].")
    assert_masked(final.content)
    assert_masked(json.dumps([m.model_dump() for m in out["messages"]], default=str))


async def test_every_streamed_event_masks_credentials_the_model_repeats():
    with OpenAIServer(leaky_script(rejections=1)) as server:
        agent = await http_agent(server)
        events = [
            event
            async for event in agent.get_compiled_graph().astream(
                {"messages": [HumanMessage("When was Castle Varen built?")]},
                {"configurable": {"thread_id": "s"}},
                stream_mode=["updates", "custom", "tasks", "values"],
            )
        ]
    kinds = {mode for mode, _ in events}
    assert {"updates", "custom", "tasks", "values"} <= kinds
    assert any(mode == "custom" and data.get("event") == "answer_rejected" for mode, data in events)
    assert_masked(json.dumps(events, default=str))
