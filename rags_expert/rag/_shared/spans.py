"""Span citations: each sentence of the final answer with the exact span of the chunk that supports it.

``response_metadata["citations"]`` lists, per answer sentence (:func:`~rags_expert.evidence.split_sentences`),
``{"sentence", "span", "support", "unsupported"}``; ``span`` is

``{"uid", "n", "start", "end", "sha256", "quote", "source"}``: the chunk's id in the knowledge base (``uid``, as
in ``sources``), its number in the answer (``n``), the character offsets of the supporting text in the chunk's
text as stored, the SHA-256 of that text and the text itself: ``quote == chunk_text[start:end]`` always.

The span comes from the evidence, model-free, whatever the profile and whoever worded the answer: the sentence's
content terms (:func:`~rags_expert.evidence.terms`) against every segment of the chunks it cites (a sentence,
line or list item of the raw text, alone or with its neighbour; the chunk's title and heading count too, as in
:meth:`~rags_expert.evidence.EvidenceScorer.support`). A sentence that cites no chunk is looked for in all of
the answer's sources. The best segment holding at least ``evidence.span_min_support`` of the sentence's terms is
its span; below that the sentence is reported ``"span": null, "unsupported": true``, never silently cited.
A sentence without content terms ("It was.") has no span and is not unsupported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rags_expert.citations import cited_numbers
from rags_expert.evidence import split_sentences, strip_citations, terms
from rags_expert.retrieval.verify import chunk_sha256

# a segment ends at a line break, or at . ! ? (and closing quotes/brackets) followed by space
_BREAK = re.compile(r"\n|(?<=[.!?])[\"'”’)\]]*[ \t]+(?=[\"'“‘(\[`*]?[A-Z0-9`])")
_LEADING_CITATIONS = re.compile(r"^((?:\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]\s*)+)")
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "mt", "no", "vs", "etc", "e.g", "i.e", "prof", "jr", "sr"})
_MARKUP = re.compile(r"^(?:\s*(?:#{1,6}|[-*+]|\d{1,3}[.)]|>|\|)\s+)+")


def segments(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the quotable segments of a chunk's raw text: its lines, cut at sentence ends, without
    surrounding whitespace and leading Markdown markers (``#``, list bullets, ``>``); empty ones dropped."""
    out, start = [], 0
    for match in [*_BREAK.finditer(text), None]:
        end = match.start() if match else len(text)
        before = text[start:end].rsplit(None, 1)[-1].rstrip(".").lower() if text[start:end].strip() else ""
        if match and match.group() != "\n" and (before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha())):
            continue  # "vs. Jimmy", "J. Smith": no sentence end
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        lead += m.end() if (m := _MARKUP.match(piece[lead:])) else 0
        s, e = start + lead, start + len(piece.rstrip())
        if e > s:
            out.append((s, e))
        start = match.end() if match else len(text)
    return out


def answer_sentences(answer: str) -> list[str]:
    """The sentences of an answer (:func:`~rags_expert.evidence.split_sentences`), each with the citations written
    after its full stop ("… in 1874. [1]", "“…1874.” [1]") moved back onto it from the start of the next."""
    out: list[str] = []
    for sentence in split_sentences(answer):
        lead = _LEADING_CITATIONS.match(sentence)
        if lead and out:
            out[-1] += " " + lead.group(1).strip()
            sentence = sentence[lead.end() :].strip()
        if sentence:
            out.append(sentence)
    return out


def _header(source: dict[str, Any]) -> set[str]:
    """Terms of the chunk's title and of the first line of a chunk of several (the heading path ingestion puts
    there)."""
    first, newline, _ = str(source.get("content") or "").partition("\n")
    return terms(f"{source.get('title') or ''} {first if newline else ''}")


def best_span(claim: set[str], source: dict[str, Any]) -> tuple[float, int, int]:
    """The segment (or two neighbouring ones) of ``source``'s text holding most of ``claim``'s terms, the
    shorter on a tie: ``(share of the terms, start, end)``."""
    text = str(source.get("content") or "")
    header = _header(source)
    cuts = segments(text)
    held = [terms(text[s:e]) for s, e in cuts]
    best = (0.0, 0, 0)
    for i, (s, _) in enumerate(cuts):
        for j in (i, i + 1):
            if j >= len(cuts):
                continue
            share = len(claim & (header | held[i] | held[j])) / len(claim)
            if (share, s - cuts[j][1]) > (best[0], best[1] - best[2]):  # more terms, then shorter
                best = (share, s, cuts[j][1])
    return best


def span_citations(answer: str, sources: Sequence[dict[str, Any]], min_support: float) -> list[dict[str, Any]]:
    """One entry per sentence of ``answer`` (citations numbered as ``sources``, each a
    :func:`~rags_expert.citations.source_dict`), see the module docstring."""
    out = []
    for sentence in answer_sentences(answer):
        claim = terms(strip_citations(sentence))
        entry: dict[str, Any] = {"sentence": strip_citations(sentence), "span": None, "support": 0.0}
        if not claim:
            out.append(entry | {"unsupported": False})
            continue
        numbers = cited_numbers(sentence, len(sources)) or [s["n"] for s in sources]
        found = max(
            ((best_span(claim, sources[n - 1]), n) for n in numbers),
            key=lambda pair: pair[0][0],
            default=((0.0, 0, 0), 0),
        )
        (share, start, end), n = found
        entry["support"] = round(share, 3)
        if n and share >= min_support:
            src = sources[n - 1]
            text = str(src.get("content") or "")
            entry["span"] = {
                "uid": src["uid"],
                "n": n,
                "start": start,
                "end": end,
                "sha256": chunk_sha256(text),
                "quote": text[start:end],
                "source": src.get("source"),
            }
        out.append(entry | {"unsupported": entry["span"] is None})
    return out
