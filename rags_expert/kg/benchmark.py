"""BioChatter's query-generation cases and scoring a query against them.

A case (``query_test_data.yaml``) has a question, a schema name and the regexes
(``parts_of_query``) that a correct Cypher query matches. :func:`regex_score`
is the fraction of them a query matches, as BioChatter's benchmark scores it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class QueryCase:
    """One query-generation case."""

    case: str
    schema: str
    question: str
    parts_of_query: tuple[str, ...]
    expected: dict[str, Any] = field(default_factory=dict, compare=False)


def load_query_cases(path: str | Path) -> list[QueryCase]:
    """The ``biocypher_query_generation`` cases of a BioChatter ``query_test_data.yaml``."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    cases = []
    for entry in data.get("biocypher_query_generation", []):
        expected = entry.get("expected") or {}
        cases.append(
            QueryCase(
                case=str(entry["case"]),
                schema=str(entry["input"]["kg_schema"]),
                question=str(entry["input"]["prompt"]),
                parts_of_query=tuple(str(p) for p in expected.get("parts_of_query") or ()),
                expected=expected,
            )
        )
    return cases


def regex_matches(query: str, patterns: Sequence[str]) -> list[bool]:
    """Whether ``query`` matches each pattern (``re.search``); an invalid pattern counts as no match."""
    out = []
    for pattern in patterns:
        try:
            out.append(re.search(pattern, query) is not None)
        except re.error:
            out.append(False)
    return out


def regex_score(query: str | None, patterns: Sequence[str]) -> float:
    """Fraction of ``patterns`` that ``query`` matches (0.0 for no query; 1.0 when there are no patterns)."""
    if not patterns:
        return 1.0
    if not query:
        return 0.0
    hits = regex_matches(query, patterns)
    return sum(hits) / len(hits)
