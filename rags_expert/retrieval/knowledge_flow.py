"""Client and retriever for a knowledge-flow vector-search service (``POST {base_url}/vector/search``).

Two request generations exist:

* v1 (before September 2025): ``{"query", "top_k", "tags"}``;
* v2 (current): ``{"question", "top_k" (1-100), "document_library_tags_ids", "document_uids", "search_policy"}``.

Both answer a JSON list of hits (``content, file_path, file_name, page, uid, title, score, ...``). With
``kf_api="auto"`` the client sends v2 and switches to v1 when the service answers 422 naming the
missing ``query`` field (and the other way round), remembering the generation it found.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from typing import Any

import requests
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rags_expert.settings import RetrievalSettings

log = logging.getLogger(__name__)
CORE_FIELDS = ("content", "title", "file_path", "file_name", "page", "uid", "score")


class KnowledgeFlowError(RuntimeError):
    """The knowledge-flow service refused the request or answered something unusable."""


def _missing_field(resp: requests.Response) -> str | None:
    """Name of the body field a 422 says is missing (FastAPI/pydantic ``detail[].loc``), if any."""
    try:
        detail = resp.json().get("detail")
    except (ValueError, AttributeError):
        return None
    for item in detail if isinstance(detail, list) else []:
        loc = item.get("loc") if isinstance(item, dict) else None
        if isinstance(loc, list) and loc and item.get("type", "missing") in ("missing", "value_error.missing"):
            return str(loc[-1])
    return None


def v1_body(question: str, top_k: int, tags: list[str] | None) -> dict[str, Any]:
    """The pre-September-2025 request body."""
    body: dict[str, Any] = {"query": question, "top_k": top_k}
    if tags:
        body["tags"] = list(tags)
    return body


def v2_body(question: str, top_k: int, tags: list[str] | None, uids: list[str] | None,
            policy: str | None) -> dict[str, Any]:
    """The current request body (``top_k`` clamped to the service's 1-100)."""
    body: dict[str, Any] = {"question": question, "top_k": max(1, min(100, top_k))}
    if tags:
        body["document_library_tags_ids"] = list(tags)
    if uids:
        body["document_uids"] = list(uids)
    if policy:
        body["search_policy"] = policy
    return body


def hit_to_document(hit: Any, index: int) -> Document:
    """Map one hit to a Document with the metadata contract (title, source, page, score, chunk_id, tags)."""
    if not isinstance(hit, dict) or not isinstance(hit.get("content"), str):
        raise KnowledgeFlowError(f"malformed hit #{index}: expected an object with a string 'content'")
    meta = {k: v for k, v in hit.items() if k != "content"}
    source = hit.get("file_path") or hit.get("file_name") or hit.get("citation_url") or ""
    page = hit.get("page")
    try:
        score = float(hit.get("score") or 0.0)
    except (TypeError, ValueError) as exc:
        raise KnowledgeFlowError(f"malformed hit #{index}: score {hit.get('score')!r} is not a number") from exc
    uid = hit.get("uid")
    digest = hashlib.sha1(f"{uid}\x00{page}\x00{hit['content']}".encode()).hexdigest()[:16]
    meta.update(
        title=hit.get("title") or hit.get("file_name") or "",
        source=str(source),
        page=page if isinstance(page, int) else None,
        score=score,
        uid=uid,
        chunk_id=f"kf:{uid}:{digest}",
        tags=list(hit.get("tag_names") or hit.get("tag_ids") or hit.get("tags") or []),
    )
    return Document(page_content=hit["content"], metadata=meta)


class KnowledgeFlowClient:
    """Blocking HTTP client (``requests``) with timeouts, bounded retries and generation detection."""

    def __init__(self, settings: RetrievalSettings) -> None:
        if not settings.kf_base_url:
            raise KnowledgeFlowError("retrieval.kf_base_url is not set")
        self.url = settings.kf_base_url.rstrip("/") + "/vector/search"
        self.settings = settings
        self._api = None if settings.kf_api == "auto" else settings.kf_api
        self._api_lock = threading.Lock()

    @property
    def api(self) -> str | None:
        """The request generation in use (None until auto-detection has seen an answer)."""
        return self._api

    def _headers(self) -> dict[str, str]:
        """JSON headers plus the bearer token when configured."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.kf_token is not None:
            headers["Authorization"] = f"Bearer {self.settings.kf_token.get_secret_value()}"
        return headers

    def _post(self, body: dict[str, Any]) -> requests.Response:
        """POST with retries on connection errors, timeouts, 429 and 5xx (exponential backoff)."""
        s = self.settings
        for attempt in range(s.kf_max_retries + 1):
            try:
                resp = requests.post(self.url, json=body, headers=self._headers(), timeout=s.kf_timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                problem = f"{type(exc).__name__}"
            else:
                if resp.status_code < 500 and resp.status_code != 429:
                    return resp
                problem = f"HTTP {resp.status_code}"
            if attempt == s.kf_max_retries:
                raise KnowledgeFlowError(
                    f"knowledge-flow {self.url} failed after {attempt + 1} attempts: {problem}"
                )
            delay = s.kf_retry_base_delay * (2**attempt)
            log.warning("knowledge-flow %s (attempt %d), retrying in %.2fs", problem, attempt + 1, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def search(self, question: str, top_k: int, tags: list[str] | None = None,
               document_uids: list[str] | None = None, search_policy: str | None = None) -> list[Document]:
        """Search the service; returns Documents in the service's order."""
        policy = search_policy or self.settings.kf_search_policy
        api = self._api or "v2"
        for _ in range(2):  # at most one generation switch
            body = v1_body(question, top_k, tags) if api == "v1" else v2_body(question, top_k, tags, document_uids, policy)
            resp = self._post(body)
            if resp.status_code == 422 and self.settings.kf_api == "auto":
                missing = _missing_field(resp)
                other = {"query": "v1", "question": "v2"}.get(missing or "")
                if other and other != api:
                    log.info("knowledge-flow asks for %r: switching to the %s request", missing, other)
                    api = other
                    continue
            break
        if resp.status_code >= 400:
            raise KnowledgeFlowError(
                f"knowledge-flow {self.url} answered HTTP {resp.status_code}: {resp.text[:300]!r}"
            )
        with self._api_lock:
            self._api = api
        try:
            hits = resp.json()
        except (ValueError, json.JSONDecodeError) as exc:
            raise KnowledgeFlowError(f"knowledge-flow {self.url} answered a body that is not JSON") from exc
        if not isinstance(hits, list):
            raise KnowledgeFlowError(
                f"knowledge-flow {self.url} answered a JSON {type(hits).__name__}, expected a list of hits"
            )
        docs = [hit_to_document(h, i) for i, h in enumerate(hits)]
        if api == "v1" and document_uids:  # v1 cannot filter by document: do it here
            wanted = set(document_uids)
            docs = [d for d in docs if d.metadata.get("uid") in wanted]
        return docs[:top_k]


class KnowledgeFlowRetriever(BaseRetriever):
    """A ``BaseRetriever`` over a knowledge-flow service; per-request options come as ``invoke`` kwargs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: KnowledgeFlowClient
    settings: RetrievalSettings

    @classmethod
    def from_settings(cls, settings: RetrievalSettings) -> KnowledgeFlowRetriever:
        """Build the retriever from the retrieval settings."""
        return cls(client=KnowledgeFlowClient(settings), settings=settings)

    def _search(self, query: str, top_k: int | None, library_tags: list[str] | None,
                document_uids: list[str] | None, search_policy: str | None) -> list[Document]:
        """Resolve per-request options against the settings and search."""
        tags = library_tags if library_tags is not None else (self.settings.library_tags or None)
        return self.client.search(query, int(top_k or self.settings.top_k), tags, document_uids, search_policy)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                top_k: int | None = None, library_tags: list[str] | None = None,
                                document_uids: list[str] | None = None, search_policy: str | None = None,
                                **kwargs: Any) -> list[Document]:
        """Synchronous search."""
        return self._search(query, top_k, library_tags, document_uids, search_policy)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       top_k: int | None = None, library_tags: list[str] | None = None,
                                       document_uids: list[str] | None = None, search_policy: str | None = None,
                                       **kwargs: Any) -> list[Document]:
        """Asynchronous search: the blocking HTTP call runs in a worker thread."""
        return await asyncio.to_thread(self._search, query, top_k, library_tags, document_uids, search_policy)
