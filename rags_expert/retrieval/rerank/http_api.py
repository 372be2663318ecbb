"""A client for the common ``/rerank`` HTTP APIs (``rerank.kind: http``).

Two request shapes cover the self-hosted and hosted rerankers:

* ``cohere``: ``POST {url}/v1/rerank {"model", "query", "documents": [str], "top_n"}`` →
  ``{"results": [{"index", "relevance_score"}, ...]}`` (Cohere; also Jina, vLLM, Infinity, LiteLLM, OpenVINO);
* ``tei``: Hugging Face text-embeddings-inference, ``POST {url}/rerank {"query", "texts": [str], "truncate"}`` →
  ``[{"index", "score"}, ...]``.

Blocking ``requests`` calls on a daemon thread of their own (:func:`~rags_expert.threads.in_daemon_thread`: not the
loop's default executor, so a slow reply never blocks later questions, ``asyncio.run`` or the process's exit), with
the knowledge-flow client's retry rule (connection errors, timeouts, 429 and 5xx; a 500 repeating its body is not
retried again) and the shared backoff. ``requests``' timeout bounds each read only, so the body is streamed with a
total deadline (``rerank.timeout`` per attempt) and a size cap (``rerank.max_reply_bytes``), and the connection
closed after it. The API key is sent as a bearer token and never appears in an error or a log line. Any fault
raises :class:`RerankError`; the RAG graph then keeps the retrieval order (:mod:`rags_expert.rag.retrieve.reranking`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import requests
import urllib3
from langchain_core.documents import Document
from tenacity import RetryCallState, Retrying, stop_after_attempt

from rags_expert.llm.backoff import last_failure, wait_backoff
from rags_expert.retrieval.knowledge_flow import _problem, _RetryableOutcome
from rags_expert.retrieval.rerank.base import RerankError, by_indices
from rags_expert.secrets import redact
from rags_expert.settings import RerankSettings
from rags_expert.threads import in_daemon_thread

log = logging.getLogger(__name__)
PATHS = {"cohere": "/v1/rerank", "tei": "/rerank"}
FIELDS = {"cohere": ("results", "relevance_score"), "tei": (None, "score")}


def endpoint(url: str, api: str) -> str:
    """The request URL: ``url`` itself when it ends in ``/rerank``; for the cohere shape a base ending in a version
    (``…/v1``, ``…/v2``) gets ``/rerank``, any other base the API's path."""
    base = url.rstrip("/")
    if base.endswith("/rerank"):
        return base
    if api == "cohere" and base.rsplit("/", 1)[-1] in ("v1", "v2"):
        return base + "/rerank"
    return base + PATHS[api]


def request_body(api: str, query: str, texts: list[str], top_k: int, model: str | None) -> dict[str, Any]:
    """The JSON body of one rerank request in the ``api``'s shape."""
    if api == "tei":
        return {"query": query, "texts": texts, "truncate": True}
    body: dict[str, Any] = {"query": query, "documents": texts, "top_n": min(top_k, len(texts))}
    if model:
        body["model"] = model
    return body


def ranking(api: str, payload: Any) -> list[Any]:
    """The candidate indices of a reply as the server wrote them (:func:`~.base.by_indices` checks them), best
    first (sorted by score: a server need not sort them). Raises :class:`RerankError` for a reply of another shape."""
    key, score = FIELDS[api]
    items = payload.get(key) if key and isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise RerankError(f"the {api} reply is not {'an object with a list ' + repr(key) if key else 'a list'}")
    pairs = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get(score), (int, float)):
            raise RerankError(f"the {api} reply holds an item without a numeric {score!r}")
        pairs.append((float(item[score]), item.get("index")))
    pairs.sort(key=lambda p: -p[0])
    return [index for _, index in pairs]


class TotalTimeout(requests.Timeout):
    """The whole reply did not arrive within ``rerank.timeout`` (each read did: a body sent a byte at a time)."""


@dataclass(frozen=True)
class Reply:
    """A reply read to its end: what the retry rule (``status_code``, ``text``) and the ranking need."""

    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class HttpReranker:
    """Reranks through a ``/rerank`` server (``rerank.url``, ``rerank.api``)."""

    def __init__(self, settings: RerankSettings) -> None:
        if not settings.url:
            raise RerankError("rerank.kind=http needs rerank.url")
        self.settings = settings
        self.url = endpoint(settings.url, settings.api)
        self.name = f"http:{settings.api}"

    def _secrets(self) -> list[str]:
        return [self.settings.api_key.get_secret_value()] if self.settings.api_key is not None else []

    def where(self) -> str:
        """The endpoint for messages, credentials redacted."""
        return redact(self.url, self._secrets())

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
        return headers

    def _log_retry(self, state: RetryCallState) -> None:
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "reranker %s %s (attempt %d), retrying in %.2fs",
            self.where(),
            _problem(last_failure(state)),
            state.attempt_number,
            wait,
        )

    def _gave_up(self, state: RetryCallState) -> Reply:
        """The last response once retries run out; a last attempt that did not connect is a :class:`RerankError`."""
        outcome = state.outcome
        assert outcome is not None
        if outcome.failed:
            raise RerankError(
                f"{self.where()} failed after {state.attempt_number} attempts: {_problem(outcome.exception())}"
            ) from None
        reply: Reply = outcome.result()
        return reply

    def _post(self, body: dict[str, Any]) -> Reply:
        """One POST, its reply read to the end within ``rerank.timeout`` in all (:class:`TotalTimeout`) and at most
        ``rerank.max_reply_bytes`` long (:class:`RerankError`); the connection is closed after it either way."""
        s = self.settings
        deadline = time.monotonic() + s.timeout
        with requests.post(self.url, json=body, headers=self._headers(), timeout=s.timeout, stream=True) as resp:
            parts, size = [], 0
            try:
                while part := resp.raw.read1(65536, decode_content=True):  # whatever has arrived, up to 64 KiB
                    size += len(part)
                    if size > s.max_reply_bytes:
                        raise RerankError(f"{self.where()} answered more than {s.max_reply_bytes} bytes")
                    if time.monotonic() > deadline:
                        raise TotalTimeout()
                    parts.append(part)
            except urllib3.exceptions.ReadTimeoutError:  # as requests names them when it reads the body
                raise requests.ReadTimeout() from None
            except urllib3.exceptions.HTTPError:  # a connection lost or a body cut short: retried as a connection error
                raise requests.ConnectionError() from None
            return Reply(resp.status_code, b"".join(parts))

    def rank_sync(self, query: str, texts: list[str], top_k: int) -> list[int]:
        """The server's ranking of ``texts`` (indices, best first); blocking."""
        s = self.settings
        retrying = Retrying(
            stop=stop_after_attempt(s.max_retries + 1),
            wait=wait_backoff(s.retry_base_delay, s.timeout),
            retry=_RetryableOutcome(),
            before_sleep=self._log_retry,
            retry_error_callback=self._gave_up,
            sleep=time.sleep,
        )
        body = request_body(s.api, query, texts, top_k, s.model)
        resp = retrying(self._post, body)
        if resp.status_code >= 400:
            raise RerankError(f"{self.where()} answered HTTP {resp.status_code}")
        try:
            payload = json.loads(resp.content)
        except ValueError:
            raise RerankError(f"{self.where()} answered a body that is not JSON") from None
        return ranking(s.api, payload)

    async def rerank(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The ``top_k`` best of ``docs`` by the server's ranking (those it leaves out follow in retrieval order)."""
        texts = [d.page_content for d in docs]
        ranked = await in_daemon_thread(self.rank_sync, query, texts, top_k, name="rags-expert-rerank")
        return by_indices(docs, ranked, top_k)
