"""Client and retriever for a knowledge-flow vector-search service (``POST {base_url}/vector/search``).

Two request generations exist:

* v1 (before September 2025): ``{"query", "top_k", "tags"}``;
* v2 (current): ``{"question", "top_k" (1-100), "document_library_tags_ids", "document_uids", "search_policy"}``.

Both answer a JSON list of hits (``content, file_path, file_name, page, uid, title, score, ...``). With
``knowledge_flow.api="auto"`` the client sends v2 and switches to v1 when the service answers 422 naming the
missing ``query`` field (and the other way round), remembering the generation it found.

The service fills metadata it lacks with placeholder strings (``"Unknown"``, ``"unknown_model"``); they are
treated as missing, so titles and sources fall back to ``file_name``. Tags are the service's tag **ids**; an
unknown id makes it answer a plain ``500 Internal Server Error``, which is not retried once it repeats.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from typing import Any, Literal

import requests
from langchain_core.documents import Document
from tenacity import RetryCallState, Retrying, stop_after_attempt

from rags_expert.llm.backoff import last_failure, wait_backoff
from rags_expert.llm.chat import redact
from rags_expert.retrieval.base import ScopedRetriever
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import KnowledgeBaseSettings, KnowledgeFlowSettings

log = logging.getLogger(__name__)
CORE_FIELDS = ("content", "title", "file_path", "file_name", "page", "uid", "score")
PLACEHOLDERS = frozenset({"", "unknown", "unknown_model", "unknown_index"})
TAG_ERRORS = (403, 404, 500)  # what the service answers for a tag id it cannot resolve
BODY_CHARS = 300


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


def _problem(failure: Any) -> str:
    """How a failed attempt reads in logs and errors: the exception class, or ``HTTP <status>``."""
    if isinstance(failure, BaseException):
        return type(failure).__name__
    return f"HTTP {failure.status_code}"


class _RetryableOutcome:
    """tenacity ``retry=`` predicate of one request: connection errors, timeouts, 429 and 5xx,
    except a 500 whose body repeats the previous attempt's (deterministic: retrying cannot help)."""

    def __init__(self) -> None:
        self.previous_500: str | None = None

    def __call__(self, state: RetryCallState) -> bool:
        failure = last_failure(state)
        if isinstance(failure, BaseException):
            self.previous_500 = None
            return isinstance(failure, (requests.ConnectionError, requests.Timeout))
        if failure.status_code < 500 and failure.status_code != 429:
            return False
        repeated = failure.status_code == 500 and failure.text == self.previous_500
        self.previous_500 = failure.text if failure.status_code == 500 else None
        return not repeated


def _log_retry(state: RetryCallState) -> None:
    """One warning per retry: what failed, the attempt, the wait."""
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning(
        "knowledge-flow %s (attempt %d), retrying in %.2fs", _problem(last_failure(state)), state.attempt_number, wait
    )


def v1_body(question: str, top_k: int, tags: list[str] | None) -> dict[str, Any]:
    """The pre-September-2025 request body."""
    body: dict[str, Any] = {"query": question, "top_k": top_k}
    if tags:
        body["tags"] = list(tags)
    return body


def v2_body(
    question: str, top_k: int, tags: list[str] | None, uids: list[str] | None, policy: str | None
) -> dict[str, Any]:
    """The current request body (``top_k`` clamped to the service's 1-100)."""
    body: dict[str, Any] = {"question": question, "top_k": max(1, min(100, top_k))}
    if tags:
        body["document_library_tags_ids"] = list(tags)
    if uids:
        body["document_uids"] = list(uids)
    if policy:
        body["search_policy"] = policy
    return body


def is_placeholder(value: Any) -> bool:
    """True for the strings the service puts where it has no value (``"Unknown"``, ``""``, ...)."""
    return isinstance(value, str) and value.strip().lower() in PLACEHOLDERS


def hit_to_document(hit: Any, index: int) -> Document:
    """Map one hit to a Document with the metadata contract (title, source, page, score, chunk_id, tags).

    Placeholder values become ``None``; title and source fall back to ``file_name``.
    """
    if not isinstance(hit, dict) or not isinstance(hit.get("content"), str):
        raise KnowledgeFlowError(f"malformed hit #{index}: expected an object with a string 'content'")
    meta = {k: (None if is_placeholder(v) else v) for k, v in hit.items() if k != "content"}
    name = meta.get("file_name")
    source = meta.get("file_path") or name or meta.get("citation_url") or ""
    page = meta.get("page")
    try:
        score = float(hit.get("score") or 0.0)
    except (TypeError, ValueError) as exc:
        raise KnowledgeFlowError(f"malformed hit #{index}: score {hit.get('score')!r} is not a number") from exc
    uid = meta.get("uid")
    digest = hashlib.sha1(f"{hit.get('uid')}\x00{page}\x00{hit['content']}".encode()).hexdigest()[:16]
    meta.update(
        title=meta.get("title") or name or "",
        source=str(source),
        page=page if isinstance(page, int) else None,
        score=score,
        uid=uid,
        chunk_id=f"kf:{uid or name or ''}:{digest}",
        tags=list(meta.get("tag_names") or meta.get("tag_ids") or meta.get("tags") or []),
    )
    return Document(page_content=hit["content"], metadata=meta)


class KnowledgeFlowClient:
    """Blocking HTTP client (``requests``) with timeouts, bounded retries and generation detection."""

    def __init__(self, settings: KnowledgeFlowSettings) -> None:
        if not settings.base_url:
            raise KnowledgeFlowError("knowledge_flow.base_url is not set")
        self.url = settings.base_url.rstrip("/") + "/vector/search"
        self.settings = settings
        self._api = None if settings.api == "auto" else settings.api
        self._api_lock = threading.Lock()

    @property
    def api(self) -> str | None:
        """The request generation in use (None until auto-detection has seen an answer)."""
        return self._api

    def _headers(self) -> dict[str, str]:
        """JSON headers plus the bearer token when configured."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.token is not None:
            headers["Authorization"] = f"Bearer {self.settings.token.get_secret_value()}"
        return headers

    def _secrets(self) -> list[str]:
        """Values that must never appear in an error: the bearer token."""
        return [self.settings.token.get_secret_value()] if self.settings.token is not None else []

    def _where(self) -> str:
        """The endpoint for messages, with any URL credentials redacted."""
        return redact(self.url, self._secrets())

    def _post(self, body: dict[str, Any], path: str = "/vector/search") -> tuple[requests.Response, int]:
        """POST to ``path`` (the reranker's: ``/vector/rerank``) with retries on connection errors, timeouts, 429
        and 5xx (the shared backoff).

        Returns the last response and the number of attempts. A 500 whose body repeats the previous
        attempt's is deterministic (a bad tag id, say) and is not retried again. The waits double
        from ``knowledge_flow.retry_base_delay`` (a server's Retry-After wins), capped at ``knowledge_flow.timeout``.
        """
        s = self.settings
        retrying = Retrying(
            stop=stop_after_attempt(s.max_retries + 1),
            wait=wait_backoff(s.retry_base_delay, s.timeout, jitter=False),
            retry=_RetryableOutcome(),
            before_sleep=_log_retry,
            retry_error_callback=self._gave_up,
            sleep=time.sleep,
        )
        url = self.url.removesuffix("/vector/search") + path
        resp = retrying(requests.post, url, json=body, headers=self._headers(), timeout=s.timeout)
        return resp, retrying.statistics.get("attempt_number", 1)

    def _gave_up(self, state: RetryCallState) -> requests.Response | None:
        """The last response once retries run out, or the error when the last attempt did not connect."""
        outcome = state.outcome
        if outcome is not None and outcome.failed:
            raise KnowledgeFlowError(
                f"knowledge-flow {self._where()} failed after {state.attempt_number} attempts: "
                f"{_problem(outcome.exception())}"
            ) from None
        return outcome.result() if outcome is not None else None

    def _http_error(self, resp: requests.Response, attempts: int, tags: list[str] | None) -> KnowledgeFlowError:
        """The error for a refused request: status, the (truncated, redacted) body, and a hint on tag ids."""
        text = " ".join(resp.text.split())
        if len(text) > BODY_CHARS:
            text = text[:BODY_CHARS] + "…"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        message = (
            f"knowledge-flow {self._where()} answered HTTP {resp.status_code}{tries}: {redact(text, self._secrets())!r}"
        )
        if tags and resp.status_code in TAG_ERRORS:
            message += (
                f" (the request filtered on tags {redact(str(list(tags)), self._secrets())}: tags are "
                "knowledge-flow tag ids, not tag names; an unknown id makes the service fail)"
            )
        return KnowledgeFlowError(message)

    def _fetch_k(self, options: SearchOptions) -> int:
        """v1 hits to ask for: over-fetch when document_uids must be filtered here (capped, at least top_k)."""
        top_k = options.limit
        if not options.document_uids:
            return top_k
        s = self.settings
        return max(top_k, min(top_k * s.uid_overfetch_factor, s.uid_overfetch_max))

    def _body(self, api: str, question: str, options: SearchOptions) -> dict[str, Any]:
        """The request body of one generation (v2's policy: the request's, else ``knowledge_flow.search_policy``)."""
        if api == "v1":
            return v1_body(question, self._fetch_k(options), options.library_tags)
        policy = options.search_policy or self.settings.search_policy
        return v2_body(question, options.limit, options.library_tags, options.document_uids, policy)

    def _exchange(self, question: str, options: SearchOptions) -> tuple[requests.Response, str]:
        """Send the request, switching generation once when ``auto`` and a 422 names the other's field."""
        api = self._api or "v2"
        for _ in range(2):  # at most one generation switch
            resp, attempts = self._post(self._body(api, question, options))
            if resp.status_code == 422 and self.settings.api == "auto":
                missing = _missing_field(resp)
                generation_of: dict[str, Literal["v1", "v2"]] = {"query": "v1", "question": "v2"}
                other = generation_of.get(missing or "")
                if other and other != api:
                    log.info("knowledge-flow asks for %r: switching to the %s request", missing, other)
                    api = other
                    continue
            break
        if resp.status_code >= 400:
            raise self._http_error(resp, attempts, options.library_tags)
        with self._api_lock:
            self._api = api
        return resp, api

    def search(self, question: str, options: SearchOptions) -> list[Document]:
        """Search the service with resolved options (``top_k`` set); returns Documents in the service's order.

        ``None`` means no filter; an empty list of tags or documents puts nothing in scope, so no request is
        sent and nothing is returned (the service itself would read ``[]`` as no filter).
        """
        if options.scopes_nothing:
            log.debug("knowledge-flow: an empty tag or document list puts nothing in scope")
            return []
        resp, api = self._exchange(question, options)
        try:
            hits = resp.json()
        except (ValueError, json.JSONDecodeError):
            raise KnowledgeFlowError(f"knowledge-flow {self._where()} answered a body that is not JSON") from None
        if not isinstance(hits, list):
            raise KnowledgeFlowError(
                f"knowledge-flow {self._where()} answered a JSON {type(hits).__name__}, expected a list of hits"
            )
        docs = [hit_to_document(h, i) for i, h in enumerate(hits)]
        if api == "v1" and options.document_uids:  # v1 cannot filter by document: do it here, on the over-fetched hits
            wanted = set(options.document_uids)
            docs = [d for d in docs if d.metadata.get("uid") in wanted]
        return docs[: options.limit]


class KnowledgeFlowRetriever(ScopedRetriever):
    """A ``BaseRetriever`` over a knowledge-flow service; per-request options come as ``invoke`` kwargs."""

    client: KnowledgeFlowClient

    @classmethod
    def from_settings(cls, settings: KnowledgeBaseSettings) -> KnowledgeFlowRetriever:
        """Build the retriever from the knowledge-flow and retrieval settings."""
        return cls(client=KnowledgeFlowClient(settings.knowledge_flow), settings=settings)

    def _search(self, query: str, options: SearchOptions) -> list[Document]:
        """Search with the request's resolved options (the defaults and the empty-list rule: ``SearchOptions``)."""
        return self.client.search(query, options)
