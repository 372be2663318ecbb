"""Reading a Cypher query out of a model's reply: wrapping stripped, a fenced block or the statement's lines."""

from __future__ import annotations

import pytest

from rags_expert.kg.replies import clean_query, extract_cypher


@pytest.mark.parametrize(
    ("raw", "query"),
    [
        ("  MATCH (n) RETURN n;  ", "MATCH (n) RETURN n"),
        ("`MATCH (n) RETURN n`", "MATCH (n) RETURN n"),
        ("'MATCH (n) RETURN n;'", "MATCH (n) RETURN n"),
        ('"MATCH (n) RETURN n"', "MATCH (n) RETURN n"),
        ("`MATCH (n) RETURN n'", "`MATCH (n) RETURN n'"),  # quotes that do not pair are kept
    ],
)
def test_a_query_loses_its_wrapping_quotes_and_trailing_semicolon(raw, query):
    assert clean_query(raw) == query


def test_a_fenced_block_is_the_query():
    reply = "Here it is:\n```cypher\nMATCH (g:Gene)\nRETURN g.name;\n```\nThis lists genes."
    assert extract_cypher(reply) == "MATCH (g:Gene)\nRETURN g.name"


def test_without_a_fence_the_query_runs_from_its_first_clause_to_a_blank_line():
    reply = "I would write\n  OPTIONAL MATCH (g:Gene)\nRETURN g.name\n\nbecause genes are nodes."
    assert extract_cypher(reply) == "OPTIONAL MATCH (g:Gene)\nRETURN g.name"


def test_a_reply_without_a_statement_holds_no_query():
    assert extract_cypher("I cannot answer that from this schema.") is None
    assert extract_cypher("") is None
