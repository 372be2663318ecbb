"""BM25-style sparse vectors for Qdrant.

Documents carry BM25's saturated term frequency; queries carry 1 per distinct
term; Qdrant's ``Modifier.IDF`` multiplies in the inverse document frequency at
query time, over the collection as it is. Dot product of the two is BM25.
Term ids are a stable 31-bit hash of the normalised token (no vocabulary file).

A query's vector is a plain :class:`SparseVector` (the search path never imports qdrant-client: the embedded store
is Qdrant Edge); a document's is qdrant-client's, for the points that ingestion writes.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qdrant_client import models

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A short English stop-word list: these terms carry almost no IDF weight anyway,
# dropping them keeps the sparse vectors (and local-mode scoring) small.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "were",
        "which",
        "who",
        "whom",
        "will",
        "with",
        "what",
        "when",
        "where",
        "why",
        "how",
        "did",
        "do",
        "does",
        "than",
        "then",
        "there",
        "these",
        "those",
        "been",
        "being",
        "also",
        "into",
        "about",
        "after",
        "before",
        "over",
        "under",
    ]
)


@dataclass(frozen=True)
class SparseVector:
    """The term ids and weights of a sparse query vector (``qdrant_client.models.SparseVector``'s fields)."""

    indices: list[int]
    values: list[float]


K1 = 1.2
B = 0.75
AVG_LEN = 256.0


def _stem(token: str) -> str:
    """A very light English suffix strip (plural -s / -es), enough to match 'films' with 'film'."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words, lightly stemmed."""
    return [_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def term_id(token: str) -> int:
    """Stable 31-bit id of a token (CRC32; collisions are rare and harmless for ranking)."""
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


def _merge(counts: Counter[str]) -> dict[int, float]:
    """Fold token counts into term ids (summing the rare hash collisions)."""
    out: dict[int, float] = {}
    for tok, n in counts.items():
        tid = term_id(tok)
        out[tid] = out.get(tid, 0.0) + n
    return out


def document_vector(text: str, k1: float = K1, b: float = B, avg_len: float = AVG_LEN) -> models.SparseVector:
    """BM25 document side: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))`` per term."""
    from qdrant_client import models

    tokens = tokenize(text)
    norm = k1 * (1 - b + b * len(tokens) / avg_len)
    tf = _merge(Counter(tokens))
    idx = sorted(tf)
    return models.SparseVector(indices=idx, values=[tf[i] * (k1 + 1) / (tf[i] + norm) for i in idx])


def query_vector(text: str) -> SparseVector:
    """BM25 query side: weight 1 for every distinct term (IDF comes from Qdrant)."""
    ids = sorted({term_id(t) for t in tokenize(text)})
    return SparseVector(indices=ids, values=[1.0] * len(ids))
