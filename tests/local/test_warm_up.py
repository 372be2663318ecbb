"""The answer prompt's fixed beginning (``answer_prefix``) and ``RagsExpert.warm_up``, over real HTTP."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer, error
from langchain_core.documents import Document

from rags_expert.llm.chat import build_chat_model
from rags_expert.prompts import PromptStore
from rags_expert.rag import RagsExpert
from rags_expert.rag.answer.prompt import answer_messages, answer_prefix
from rags_expert.rag.profiles import PROFILES
from rags_expert.settings import RagsExpertSettings

DOCS = [Document(page_content="The Zephyr lighthouse was built in 1871 by Mara Quill.", metadata={"title": "Zephyr"})]


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize(
    "override",
    [None, "Literal {{braces}} first, then the sources:\n{context}\nQ: {question}{lessons}{feedback}"],
)
async def test_the_prefix_is_the_start_of_every_answer_call(profile, override):
    key = PROFILES[profile].answer_prompt
    prompts = PromptStore({key: override} if override else None).validate()
    prefix = answer_prefix(prompts, PROFILES[profile])
    real = answer_messages(
        prompts,
        PROFILES[profile],
        question="Who built the Zephyr lighthouse?",
        relevant=DOCS,
    )
    assert prefix[0].content == real[0].content
    assert real[1].content.startswith(prefix[1].content)
    assert "{{" not in prefix[1].content and "Zephyr" not in prefix[1].content
    assert len(prefix[1].content) > 0


def _agent(server: OpenAIServer, draft: bool = True) -> RagsExpert:
    """An agent of the small profile, with its drafts turned back on unless ``draft`` is False (its default)."""
    settings = RagsExpertSettings(
        llm={"base_url": server.base_url, "api_key": "sk-test-key", "max_tokens": 300, "legacy_max_tokens": True},
        evidence={"profile": "small", "draft": draft},
    )
    return RagsExpert(settings, chat_model=build_chat_model(settings.llm), retriever=KeywordRetriever(docs=DOCS))


async def test_warm_up_sends_the_prefix_with_a_one_token_cap():
    with OpenAIServer(lambda body: "x") as server:
        agent = await _agent(server).async_init()
        await agent.warm_up()
        [request] = server.requests
        body = request.body
        assert body.get("max_completion_tokens", body.get("max_tokens")) == 1
        assert body["max_tokens"] == 1  # the legacy body field a llama.cpp server reads, capped too
        expected = answer_prefix(agent.prompts, PROFILES["small"])
        assert [m["content"] for m in body["messages"]] == [m.content for m in expected]


async def test_a_profile_without_drafts_sends_no_warm_up():
    with OpenAIServer(lambda body: "x") as server:
        agent = await _agent(server, draft=False).async_init()
        await agent.warm_up()
        assert server.requests == []  # no answer call will come: nothing to warm


async def test_a_failing_warm_up_is_logged_and_ignored(caplog):
    caplog.set_level("INFO", logger="rags_expert.rag.agent")
    with OpenAIServer(lambda body: error(500, "model not loaded")) as server:
        agent = await _agent(server).async_init()
        await agent.warm_up()  # no exception escapes
        assert server.requests
    assert "warm-up call failed" in caplog.text and "sk-test-key" not in caplog.text
