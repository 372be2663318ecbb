"""Per-request options of the RAG graph, declared once and validated once per question.

A host passes them either as the run's context (``graph.ainvoke(inputs, config, context={...})``,
the LangGraph 1.x way, typed by :class:`RequestContext`, the graph's ``context_schema``) or, like
Fred-style hosts, LangGraph Server clients and our CLI, in ``config["configurable"]``. ``prepare``
reads them through :func:`read_request` and keeps the result in the state, so no retrieval round
parses them again. An invalid option is reported, never raised: the run ends in the honest
``invalid_request`` answer.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import AliasChoices, BaseModel, Field, ValidationError

from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings.errors import invalid_value
from rags_expert.settings.knowledge import SearchPolicy


class RequestContext(TypedDict, total=False):
    """The graph's context schema: what a host may pass as ``context=`` (the keys of :class:`RequestOptions`).

    A TypedDict, so LangGraph passes it through unchanged and an invalid value reaches
    :func:`read_request` (an honest ``invalid_request`` answer) instead of failing the run's start.
    """

    top_k: int
    library_tags: list[str] | str
    document_uids: list[str] | str
    search_policy: SearchPolicy
    user_id: str


class RequestOptions(SearchOptions):
    """Per-request options, validated (unknown keys, e.g. ``thread_id``, are ignored): the search's
    (:class:`~rags_expert.retrieval.options.SearchOptions`, which owns the empty-list rule) and who asks.

    ``top_k`` may lower the configured ``retrieval.top_k`` but not raise it: the LLM-call bound
    counts with the configured value. A single tag or id may be given as a string. An empty list of tags
    or documents puts nothing in scope: no retriever is called and the run ends with the honest not-found answer.
    """

    user_id: str | None = Field(None, validation_alias=AliasChoices("langgraph_auth_user_id", "user_id"))
    """Who asks (scopes the lesson memory when ``lessons.scope_by`` names "user"; the authorization hook is asked
    about this user); never sent to retrievers. LangGraph Server's authenticated user (``langgraph_auth_user_id``)
    wins over a ``user_id`` the client puts in ``configurable``."""

    def search(self, configured_top_k: int) -> SearchOptions:
        """The search's options, ``top_k`` capped at the configured value (``user_id`` left out)."""
        return SearchOptions.of(self.kwargs()).capped(configured_top_k)


class InvalidRequestError(ValueError):
    """A per-request option failed validation; the message names the option, its value and the bound
    (``context.top_k=-3 is invalid: must be ≥ 1``)."""


def read_request(context: Any, config: RunnableConfig) -> RequestOptions:
    """The validated options of this run: the runtime ``context`` when the host passed one, else ``configurable``;
    LangGraph Server's authenticated user (``configurable.langgraph_auth_user_id``) is the user either way.

    Raises :class:`InvalidRequestError` naming the first invalid option.
    """
    if context is not None:
        source, raw = "context", context if isinstance(context, dict) else _as_dict(context)
    else:
        source, raw = "configurable", dict(config.get("configurable") or {})
    try:
        options = RequestOptions.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = f"{source}.{'.'.join(str(p) for p in first['loc'])}"
        raise InvalidRequestError(invalid_value(name, first, name)) from None
    authenticated = (config.get("configurable") or {}).get("langgraph_auth_user_id")
    if authenticated:  # LangGraph Server's authenticated user, whatever the client's context says
        options = options.model_copy(update={"user_id": str(authenticated)})
    return options


def _as_dict(context: Any) -> dict[str, Any]:
    """A context object (a RequestOptions, another pydantic model or a dataclass) as a plain dict."""
    if isinstance(context, BaseModel):
        return context.model_dump(exclude_none=True)
    return {k: v for k, v in vars(context).items() if v is not None}


def _accepted(method: Any, options: dict[str, Any]) -> dict[str, Any]:
    takes_any, params = _keywords(getattr(method, "__func__", method))
    return options if takes_any else {k: v for k, v in options.items() if k in params}


@functools.lru_cache(maxsize=64)
def _keywords(function: Any) -> tuple[bool, frozenset[str]]:
    """Whether ``function`` takes any keyword argument, and its parameter names (read once per function)."""
    params = inspect.signature(function).parameters
    return any(p.kind is p.VAR_KEYWORD for p in params.values()), frozenset(params)


async def ainvoke_retriever(
    retriever: BaseRetriever, query: str, config: RunnableConfig, options: SearchOptions
) -> list[Document]:
    """Call any retriever with the search options it accepts as keyword arguments (LangChain's default async
    path drops extra keyword arguments, so sync-only retrievers run in a thread)."""
    kwargs = options.kwargs()
    own_async = type(retriever)._aget_relevant_documents is not BaseRetriever._aget_relevant_documents
    if own_async:
        return await retriever.ainvoke(query, config, **_accepted(retriever._aget_relevant_documents, kwargs))
    accepted = _accepted(retriever._get_relevant_documents, kwargs)
    if not accepted:
        return await retriever.ainvoke(query, config)
    return await asyncio.to_thread(retriever.invoke, query, config, **accepted)
