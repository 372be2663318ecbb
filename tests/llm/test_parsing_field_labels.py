"""A leading field name ("relevant: no", a truncated '{"relevant": false') is a label, not a verdict."""

from __future__ import annotations

import pytest

from rags_expert.llm.parsing import parse_yes_no


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"relevant": false', False),  # tool-call arguments cut short by the token cap
        ('{"relevant": true', True),
        ('"relevant": false}', False),
        ("relevant: no", False),
        ("Relevant: false", False),
        ("Grounded = no", False),
        ("**Relevant:** yes", True),
        ("Useful: No - the date is missing", False),
        ("Relevant.", True),  # the bare word is still a verdict
        ("relevant", True),
        ("Verdict: relevant", True),
    ],
)
def test_field_label_is_not_the_verdict(text, expected):
    assert parse_yes_no(text) is expected
