"""Graders cope with an endpoint that refuses the structured-output request itself.

Measured on llama-cpp-python's server: ``response_format={"type": "json_schema", ...}`` gets HTTP 500 with a
request-validation body (only 'text' / 'json_object' are accepted). Retrying cannot help; the grader asks
once more for plain text and parses that.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from rags_expert.llm import grading, structured
from rags_expert.llm.chat import LLMCallError, is_transient
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

# The body llama-cpp-python 0.3.36 really sent back (as openai's client renders it).
REJECTED = (
    "Error code: 500 - 1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


def _server_error(text: str) -> openai.InternalServerError:
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    return openai.InternalServerError(text, response=httpx.Response(500, request=request), body=None)


def _ctx(method: str) -> grading.GradingContext:
    return grading.GradingContext.from_settings(RagsExpertSettings(grading={"structured_output": method}))


def test_a_request_validation_500_is_not_transient_but_a_plain_500_is():
    assert not is_transient(_server_error(REJECTED))
    assert is_transient(_server_error("Error code: 500 - internal error"))


async def test_rejected_json_schema_falls_back_to_plain_text_once():
    def responder(text, kwargs):
        if (kwargs.get("response_format") or {}).get("type") == "json_schema":
            return _server_error(REJECTED)
        return "Yes, the chunk is relevant."

    model = ScriptedChatModel(responder=responder)
    verdict = await grading.grade_relevance(model, "When?", "It was built in 1412.", _ctx("json_schema"))
    assert verdict.value is True and verdict.parsed
    kinds = [(kw.get("response_format") or {}).get("type") for _, kw in model.calls]
    assert kinds == ["json_schema", None]  # one refused request (not retried), one plain-text request


async def test_a_real_server_fault_is_still_raised_after_its_retries():
    model = ScriptedChatModel(responder=lambda text, kw: _server_error("Error code: 500 - out of memory"))
    settings = RagsExpertSettings(
        grading={"structured_output": "json_schema"}, llm={"max_retries": 1, "retry_base_delay": 0}
    )
    ctx = grading.GradingContext.from_settings(settings)
    with pytest.raises(LLMCallError) as info:
        await grading.grade_relevance(model, "When?", "It was built in 1412.", ctx)
    assert info.value.attempts == 2 and len(model.calls) == 2


def test_format_rejected_classification():
    assert structured.format_rejected(LLMCallError("BadRequestError", "tools are not supported", 1))
    assert structured.format_rejected(LLMCallError("InternalServerError", REJECTED, 1))
    assert not structured.format_rejected(LLMCallError("BadRequestError", "context length exceeded", 1))
    assert not structured.format_rejected(LLMCallError("InternalServerError", "out of memory", 4))
    assert not structured.format_rejected(LLMCallError("TimeoutError", "TimeoutError", 4))


async def test_no_fallback_when_retries_are_off_so_the_request_bound_holds():
    model = ScriptedChatModel(responder=lambda text, kw: _server_error(REJECTED))
    settings = RagsExpertSettings(grading={"structured_output": "json_schema"}, llm={"max_retries": 0})
    with pytest.raises(LLMCallError):
        await grading.grade_relevance(
            model, "When?", "It was built in 1412.", grading.GradingContext.from_settings(settings)
        )
    assert len(model.calls) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"relevant": false', False),  # cut off at the token cap
        ('{\n  "grounded": false,\n  "unsupported": "the year is not in', False),
        ('{"relevant": true, "why": "it names the castle', True),
        ('{"relevant":', None),  # the verdict itself was cut: unknown, not "relevant"
    ],
)
def test_truncated_json_replies_are_closed_and_read(text, expected):
    from rags_expert.llm.parsing import parse_yes_no

    assert parse_yes_no(text) is expected


def test_json_modes_go_in_the_request_body_for_openai_models_so_truncated_replies_survive():
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:1/v1", api_key="x", extra_body={"keep": 1})
    ctx = _ctx("json_mode")
    bound = structured._structured_runnable(model, grading.RelevanceGrade, ctx)
    kwargs = bound.kwargs
    assert kwargs["extra_body"] == {"keep": 1, "response_format": {"type": "json_object"}}
    assert "response_format" not in kwargs and kwargs["max_tokens"] == ctx.settings.max_tokens


def test_a_lazy_chat_model_is_built_on_first_use_and_binds_as_the_real_one():
    """``ask --local``'s chat model (issue 54): nothing is built (nor ``langchain_openai`` imported) until the model
    is first used; then the output cap goes in the request body as for the real ``ChatOpenAI``, and the bound
    runnable holds the real model, not the stand-in."""
    from langchain_openai import ChatOpenAI

    from rags_expert.llm.chat import LazyChatModel, model_class

    built = []

    def build() -> ChatOpenAI:
        built.append(1)
        return ChatOpenAI(model="m", base_url="http://127.0.0.1:1/v1", api_key="x", extra_body={"keep": 1})

    lazy = LazyChatModel(build)
    assert not lazy.built and not built and "not built" in repr(lazy)
    bound = structured._structured_runnable(lazy, grading.RelevanceGrade, _ctx("json_mode"))  # type: ignore[arg-type]
    assert bound.kwargs["extra_body"] == {"keep": 1, "response_format": {"type": "json_object"}}
    assert isinstance(bound.bound, ChatOpenAI) and bound.bound is lazy.model
    assert model_class(lazy) is ChatOpenAI and lazy.model_name == "m" and built == [1]  # built once


def test_a_lazy_chat_model_that_cannot_be_built_says_so_at_its_first_use():
    from rags_expert.llm.chat import LazyChatModel

    def build() -> ScriptedChatModel:
        raise ValueError("could not build the chat model: no key")

    lazy = LazyChatModel(build)
    with pytest.raises(ValueError, match="no key"):
        lazy.ainvoke  # noqa: B018 - the first use builds
    with pytest.raises(ValueError, match="no key"):  # and again: nothing half-built is kept
        lazy.bind(stop=["x"])
