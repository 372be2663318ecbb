"""Scripted responders for graph unit tests: answer each kind of request by reading the prompt."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL_CHECKS: dict[str, Any] = {"evidence": {"verify_answers": False}}
"""Settings for a test of the model's answer checks: ``evidence.verify_answers`` (on by default) accepts an answer
that quotes what it cites before the scripted graders are asked, so a test scripting their verdicts turns it off."""


def between(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.DOTALL)
    return m.group(1) if m else ""


def kind_of(text: str, kwargs: dict[str, Any] | None = None) -> str:
    """Which shared call or node a request comes from, by its prompt (``confirm``: a request for log-probabilities,
    the model asked whether the chunks state a proposed answer)."""
    if (kwargs or {}).get("logprobs"):
        return "confirm"
    for marker, kind in (
        ('{"relevant": [', "relevance_batch"),
        ('{"relevant":', "relevance"),
        ('{"grounded":', "grounded"),
        ('{"useful":', "useful"),
        ('{"query":', "rephrase"),
        ('{"question":', "condense"),
        ('{"needed":', "refine"),
        ('{"follow_up":', "hop"),
    ):
        if marker in text:
            return kind
    return "generate"


@dataclass
class Script:
    """Per-kind behaviour; each callable gets the prompt text and returns the reply (or an exception)."""

    relevance: Callable[[str, str], Any] = lambda question, chunk: "yes"
    relevance_batch: Callable[[str], Any] = lambda text: '{"relevant": [1]}'
    grounded: Callable[[str], Any] = lambda text: "yes"
    useful: Callable[[str], Any] = lambda text: "yes"
    rephrase: Callable[[str], Any] = lambda text: '{"query": "rephrased query"}'
    condense: Callable[[str], Any] = lambda text: '{"question": "standalone question"}'
    refine: Callable[[str], Any] = lambda text: '{"needed": [1]}'
    hop: Callable[[str], Any] = lambda text: '{"follow_up": "none"}'
    generate: Callable[[str], Any] = lambda text: "The answer is in the first chunk [1]."
    confirm: Callable[[str], Any] = lambda text: "yes"
    seen: list[str] = field(default_factory=list)

    def __call__(self, text: str, kwargs: dict[str, Any]) -> Any:
        kind = kind_of(text, kwargs)
        self.seen.append(kind)
        if kind == "relevance":
            return self.relevance(between(text, "question"), between(text, "chunk"))
        return getattr(self, kind)(text)

    def count(self, kind: str) -> int:
        return self.seen.count(kind)
