"""The options of one search, as one value: what to find, how many, in which tags and documents, by which policy.

:class:`SearchOptions` owns the three rules every search shares, so no retriever, node or tool writes them again:

* the defaults: an absent ``top_k`` is ``retrieval.top_k``, an absent ``library_tags`` is ``retrieval.library_tags``
  (``[]`` there: no filter) — :meth:`SearchOptions.resolved`;
* the empty-list rule: an absent (``None``) list of tags or documents means no filter, an empty list means nothing
  is in scope, so there is nothing to search — :attr:`SearchOptions.scopes_nothing`;
* the retriever keyword arguments: any LangChain retriever gets the options as ``invoke`` / ``ainvoke`` keywords
  (``top_k``, ``library_tags``, ``document_uids``, ``search_policy``) — :meth:`SearchOptions.kwargs` and back,
  :meth:`SearchOptions.of`.

The RAG graph's ``prepare`` validates a request's options once (``rag.options.RequestOptions``, a subclass) and
keeps them in the state as their keyword arguments (a plain dict, so any checkpointer stores them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rags_expert.settings.knowledge import RetrievalSettings, SearchPolicy


class SearchOptions(BaseModel):
    """One search's options; validated when built from a request, immutable, unknown keys ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    top_k: int | None = Field(None, ge=1)
    library_tags: list[str] | None = None
    document_uids: list[str] | None = None
    search_policy: SearchPolicy | None = None

    @field_validator("library_tags", "document_uids", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        """A single tag or id may be given as a string."""
        return [value] if isinstance(value, str) else value

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> SearchOptions:
        """The options among retriever keyword arguments (others ignored), taken as given: callers validated them."""
        return cls.model_construct(**{k: v for k in cls.model_fields if (v := options.get(k)) is not None})

    @property
    def scopes_nothing(self) -> bool:
        """Whether the search has nothing in scope: an empty list (not ``None``) of tags or of documents."""
        return self.library_tags == [] or self.document_uids == []

    @property
    def limit(self) -> int:
        """How many hits to return, once :meth:`resolved` has set ``top_k``."""
        if self.top_k is None:
            raise ValueError("search options not resolved: no top_k")
        return self.top_k

    def default_tags(self, retrieval: RetrievalSettings) -> list[str] | None:
        """The tags to search: the request's, else ``retrieval.library_tags`` (``[]`` there: ``None``, no filter)."""
        return self.library_tags if self.library_tags is not None else (retrieval.library_tags or None)

    def resolved(self, retrieval: RetrievalSettings) -> SearchOptions:
        """These options with the configured defaults filled in: ``top_k`` and the default tags."""
        update = {"top_k": self.top_k or retrieval.top_k, "library_tags": self.default_tags(retrieval)}
        return self.model_copy(update=update)

    def capped(self, configured_top_k: int) -> SearchOptions:
        """These options with ``top_k`` set and at most ``configured_top_k`` (the LLM-call bound counts with it)."""
        return self.model_copy(update={"top_k": min(self.top_k or configured_top_k, configured_top_k)})

    def unfiltered(self) -> SearchOptions:
        """Only the ``top_k`` of these options (no tags, documents or policy)."""
        return SearchOptions.model_construct(top_k=self.top_k)

    def kwargs(self) -> dict[str, Any]:
        """The options as retriever keyword arguments (the absent ones left out)."""
        return {k: v for k in SearchOptions.model_fields if (v := getattr(self, k)) is not None}
