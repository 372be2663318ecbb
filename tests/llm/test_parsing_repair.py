"""JSON repair of model replies (json_repair) is limited to JSON-shaped text: prose never becomes an object."""

from __future__ import annotations

import pytest

from rags_expert.llm.parsing import extract_json_object, parse_yes_no


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"relevant": false, "reason": "the chunk is about', {"relevant": False, "reason": "the chunk is about"}),
        ("{'binary_score': 'yes',}", {"binary_score": "yes"}),
        ('```json\n{"grounded": true,}\n```', {"grounded": True}),
        ('Verdict: {"useful": "no", } (done)', {"useful": "no"}),
        (
            '{\n  "cypher": "MATCH (g:Gene {name: \'TP53\'}) RETURN g',
            {"cypher": "MATCH (g:Gene {name: 'TP53'}) RETURN g"},
        ),
    ],
)
def test_json_shaped_replies_are_repaired(reply, expected):
    assert extract_json_object(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "The document is relevant: yes",
        'It says "relevant": no, I think',
        "relevant{ but cut",
        "grounded = yes",
    ],
)
def test_prose_is_not_turned_into_an_object(reply):
    assert extract_json_object(reply) is None


def test_a_repaired_verdict_reads_like_a_whole_one():
    assert parse_yes_no('{"relevant": "no", "reason": "unrelated to the castle') is False
    assert parse_yes_no('{"relevant": true, "reason": "names the castle",') is True
