"""Re-check an answer's span citations against the knowledge base as it is now, offline.

An answer's ``response_metadata["citations"]`` (docs/citations.md) gives each answer sentence the
span of the chunk that supports it: ``{uid, n, start, end, sha256, quote}``. :func:`verify_citations` looks each
one up in the knowledge base (no model, no embedding call) and says what became of it:

* ``ok``: the chunk ``uid`` is still stored, its text hashes to ``sha256`` and ``quote`` is still at
  ``start:end`` (``0 ≤ start ≤ end ≤`` the length of the text; a span outside it, or an empty quote, never is);
* ``moved``: the quote is still stored word for word, elsewhere in the chunk or in another chunk of the same
  document (a re-ingest after an edit elsewhere in the file re-chunks it); ``where`` gives the new span;
* ``changed``: the document is still stored but no chunk of it holds the quote any more;
* ``gone``: neither the chunk nor its document is stored.

A sentence no span supported (``"span": null``) has nothing to re-check: it is reported as ``unsupported``,
which counts neither for nor against the answer.

A not-found answer cites no sentence, but it quotes its closest passages (``closest``: ``{quote, n, source}``, the
chunk being source ``n`` of the answer): each is re-checked the same way (``kind`` ``closest``), its span found in
the chunk's text as saved, so an edit of a quoted passage makes the answer stale too. Quotes are matched word for
word, whatever the whitespace between the words.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from rags_expert.outcomes import Outcome
from rags_expert.retrieval.qdrant import KnowledgeBase, KnowledgeBaseError

Status = Literal["ok", "moved", "changed", "gone", "unsupported"]
Kind = Literal["sentence", "closest"]
GOOD: frozenset[str] = frozenset({"ok", "moved", "unsupported"})
"""Statuses that leave an answer standing (``verify`` exits 0 when every citation has one)."""


class AnswerFormatError(ValueError):
    """The answer is not a saved answer with span citations (``rags-expert ask --json``)."""


def chunk_sha256(text: str) -> str:
    """The hex SHA-256 of a chunk's text as stored (UTF-8): what a span citation's ``sha256`` holds."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class CitationCheck:
    """What became of one answer sentence's span."""

    sentence: str
    status: Status
    uid: str | None = None
    where: dict[str, Any] = field(default_factory=dict)
    """For ``moved``: the quote's new ``uid``, ``start`` and ``end``."""
    kind: Kind = "sentence"
    """``sentence``: a sentence of the answer (``sentence``) and its span; ``closest``: a closest passage of a
    not-found answer (``sentence`` holds its quote)."""

    @property
    def good(self) -> bool:
        """Whether the citation still stands (``ok``, ``moved``, or nothing to check)."""
        return self.status in GOOD

    def as_dict(self) -> dict[str, Any]:
        """The check as JSON-ready data."""
        out: dict[str, Any] = {"sentence": self.sentence, "status": self.status, "uid": self.uid, "kind": self.kind}
        if self.where:
            out["where"] = self.where
        return out


def answer_citations(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``citations`` of a saved answer (the ``--json`` output, or its ``response_metadata``), checked for shape
    (raises :class:`AnswerFormatError` saying which citation is wrong and how)."""
    citations = answer.get("citations") if isinstance(answer, Mapping) else None
    if citations is None and isinstance(answer, Mapping) and answer.get("outcome") == Outcome.FAILURE:
        closest_passages(answer)
        return []  # an honest failure states nothing to re-check (but the passages it quotes, if any)
    if not isinstance(citations, list):
        raise AnswerFormatError("not a saved answer: no 'citations' list (rags-expert ask --json writes one)")
    if answer.get("sources") is not None and not isinstance(answer["sources"], list):
        raise AnswerFormatError("not a saved answer: 'sources' is not a list")
    for i, entry in enumerate(citations, start=1):
        if fault := _citation_fault(entry):
            raise AnswerFormatError(f"not a saved answer: citation {i} {fault}")
    closest_passages(answer)
    return citations


def closest_passages(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``closest`` passages of a saved not-found answer (none for any other), checked for shape: each a
    non-empty ``quote`` and the number ``n`` of its source (raises :class:`AnswerFormatError`)."""
    closest = answer.get("closest")
    if closest is None:
        return []
    if not isinstance(closest, list):
        raise AnswerFormatError("not a saved answer: 'closest' is not a list")
    for i, entry in enumerate(closest, start=1):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("quote"), str) or not entry["quote"].strip():
            raise AnswerFormatError(f"not a saved answer: closest passage {i} has no quote")
        if type(entry.get("n")) is not int:
            raise AnswerFormatError(f"not a saved answer: closest passage {i} has no source number 'n'")
    return closest


def _citation_fault(entry: Any) -> str | None:
    """What is wrong with one entry of ``citations`` (None when it has the shape ``ask --json`` writes).

    A span's offsets must satisfy ``0 ≤ start ≤ end`` and its quote must not be empty: an empty quote at any
    offsets, or a negative ``start`` counting from the chunk's end, would match text that was never cited.
    """
    if not isinstance(entry, Mapping):
        return "is not an object"
    if not isinstance(entry.get("sentence", ""), str):
        return "has a 'sentence' that is not text"
    span = entry.get("span")
    if span is None:
        return None
    if not isinstance(span, Mapping):
        return "has a 'span' that is not an object"
    for key, kind in (("uid", str), ("start", int), ("end", int), ("sha256", str), ("quote", str)):
        if type(span.get(key)) is not kind:  # exact: a bool is no offset
            return f"has no span {{uid, start, end, sha256, quote}} ({key!r} is not {kind.__name__})"
    if not 0 <= span["start"] <= span["end"]:
        return "has span offsets that are not 0 ≤ start ≤ end"
    if not span["quote"]:
        return "has an empty quote"
    return None


def _numbered(answer: Mapping[str, Any], n: Any) -> Mapping[str, Any]:
    """Source ``n`` of the answer (``{}`` when it has none)."""
    for src in answer.get("sources") or []:  # a list (answer_citations checked)
        if isinstance(src, Mapping) and src.get("n") == n:
            return src
    return {}


def _source_of(answer: Mapping[str, Any], span: Mapping[str, Any]) -> str | None:
    """The cited chunk's document: ``span["source"]``, else that of source ``n`` of the answer."""
    source = span.get("source") or _numbered(answer, span.get("n")).get("source")
    return str(source) if source else None


def _words(quote: str) -> re.Pattern[str]:
    """``quote`` word for word, any whitespace between its words."""
    return re.compile(r"\s+".join(re.escape(word) for word in quote.split()))


def _stored(kb: KnowledgeBase, uid: str) -> dict[str, Any] | None:
    """The payload of point ``uid`` (None when absent; a uid that is no point id cannot be stored)."""
    try:
        uuid.UUID(uid)
    except ValueError:
        return None
    found = kb.retrieve_payloads([uid], ["content", "source"])
    return found[0][1] if found else None


def _document_chunks(kb: KnowledgeBase, source: str) -> list[tuple[str, str]]:
    """``(uid, text)`` of every stored chunk of ``source``."""
    from qdrant_client import models

    flt = models.Filter(must=[models.FieldCondition(key="source", match=models.MatchValue(value=source))])
    return [(pid, str(p.get("content") or "")) for pid, p in kb.scroll_payloads(["content"], flt)]


def _find(quote: str, chunks: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The first chunk that holds ``quote`` word for word (any whitespace between the words), as
    ``{uid, start, end}`` ({} when none does)."""
    words = _words(quote)
    for uid, text in chunks:
        if quote.strip() and (found := words.search(text)):
            return {"uid": uid, "start": found.start(), "end": found.end()}
    return {}


def check_span(kb: KnowledgeBase, sentence: str, span: Mapping[str, Any], source: str | None) -> CitationCheck:
    """Re-check one span (see the module docstring for the statuses)."""
    uid, quote = str(span["uid"]), str(span["quote"])
    stored = _stored(kb, uid)
    text = str(stored.get("content") or "") if stored is not None else None
    if text is not None:
        start, end = span["start"], span["end"]
        if chunk_sha256(text) == span["sha256"] and end <= len(text) and text[start:end] == quote:
            return CitationCheck(sentence, "ok", uid)
        source = source or str(stored.get("source") or "") or None if stored is not None else source
    if text is not None and (where := _find(quote, [(uid, text)])):
        return CitationCheck(sentence, "moved", uid, where)
    chunks = _document_chunks(kb, source) if source else []
    if where := _find(quote, chunks):
        return CitationCheck(sentence, "moved", uid, where)
    return CitationCheck(sentence, "changed" if chunks or text is not None else "gone", uid)


def check_passage(kb: KnowledgeBase, answer: Mapping[str, Any], passage: Mapping[str, Any]) -> CitationCheck:
    """Re-check one closest passage of a not-found answer as a span: where its quote stood in the chunk's text as
    the answer saved it (a quote the saved text lacks is looked for in the chunk and its document)."""
    quote = str(passage["quote"])
    src = _numbered(answer, passage["n"])
    content = src.get("content")
    found = _words(quote).search(content) if isinstance(content, str) else None
    span = {
        "uid": str(src.get("uid") or ""),
        "quote": found.group() if found else quote,
        "start": found.start() if found else 0,
        "end": found.end() if found else 0,
        "sha256": chunk_sha256(content) if found and isinstance(content, str) else "",
    }
    source = passage.get("source") or src.get("source")
    return replace(check_span(kb, quote, span, str(source) if source else None), kind="closest")


def verify_citations(answer: Mapping[str, Any], kb: KnowledgeBase) -> list[CitationCheck]:
    """Every citation of a saved answer, and every closest passage of a not-found one, re-checked against ``kb``
    (raises :class:`AnswerFormatError` on a file that is no saved answer, ``KnowledgeBaseError`` when the knowledge
    base cannot be read)."""
    citations = answer_citations(answer)
    if not kb.exists():
        raise KnowledgeBaseError(f"collection {kb.collection!r} does not exist: nothing to verify against")
    checks = []
    for entry in citations:
        span = entry.get("span")
        sentence = str(entry.get("sentence") or "")
        if span is None:
            checks.append(CitationCheck(sentence, "unsupported"))
        else:
            checks.append(check_span(kb, sentence, span, _source_of(answer, span)))
    checks += [check_passage(kb, answer, passage) for passage in closest_passages(answer)]
    return checks


def all_good(checks: Sequence[CitationCheck]) -> bool:
    """Whether the answer still stands: every citation ``ok`` or ``moved`` (or unsupported from the start)."""
    return all(c.good for c in checks)
