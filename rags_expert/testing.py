"""A scripted chat model for unit tests of graph logic (no network, no randomness).

``ScriptedChatModel(responder=fn)`` calls ``fn(prompt_text, kwargs)`` for every
request, where ``prompt_text`` is all message contents joined; ``fn`` returns a
string, an ``AIMessage`` or an exception instance (raised). A ``responses`` list
can be given instead and is consumed in order. Every request is recorded in
``calls``. It supports ``bind_tools`` (the tool schema arrives in ``kwargs``) and
token streaming, so it exercises the same code paths as a real model.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

Reply = str | AIMessage | BaseException
Responder = Callable[[str, dict[str, Any]], Reply]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies come from a script; see the module docstring."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responder: Responder | None = None
    responses: list[Any] = Field(default_factory=list)
    delay: float = 0.0
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: list[tuple[str, dict[str, Any]]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return self._calls

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):  # type: ignore[override]
        names = [getattr(t, "__name__", getattr(t, "name", str(t))) for t in tools]
        return self.bind(tools=names, tool_choice=tool_choice, **kwargs)

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        text = "\n\n".join(m.content if isinstance(m.content, str) else str(m.content) for m in messages)
        with self._lock:
            self._calls.append((text, dict(kwargs)))
            if self.responder is not None:
                reply = self.responder(text, dict(kwargs))
            elif self.responses:
                reply = self.responses.pop(0)
            else:
                raise RuntimeError("ScriptedChatModel ran out of scripted responses")
        if isinstance(reply, BaseException):
            raise reply
        return reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self._next(messages, kwargs)
        yield from self._chunks(message)

    async def _astream(
        self, messages, stop=None, run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.delay:
            await asyncio.sleep(self.delay)
        message = self._next(messages, kwargs)
        for chunk in self._chunks(message):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    @staticmethod
    def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
        if message.tool_calls or not isinstance(message.content, str) or not message.content:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=message.content,
                    tool_call_chunks=[
                        {"name": c["name"], "args": json.dumps(c["args"]), "id": c.get("id"), "index": i}
                        for i, c in enumerate(message.tool_calls)
                    ],
                )
            )
            return
        words = message.content.split(" ")
        for i, word in enumerate(words):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word if i == 0 else " " + word))
