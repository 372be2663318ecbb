"""Tolerant parsing of weak-model replies (the shared grading module's last line of defence)."""

from __future__ import annotations

import pytest

from rags_expert.llm.grading import GroundednessGrade, RelevanceGrade
from rags_expert.llm.parsing import extract_json_object, parse_free_text_field, parse_model, parse_score, parse_yes_no


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Yes.", True),
        ("NO", False),
        ("yes", True),
        ("  no, it is not", False),
        ("**Yes** — it mentions 1412", True),
        ('{"relevant": true}', True),
        ('{"relevant": "no"}', False),
        ('{"binary_score": "yes"}', True),
        ('Sure!\n```json\n{"grounded": false, "unsupported": "x"}\n```', False),
        ("The chunk is not relevant to the question.", False),
        ("Verdict: relevant", True),
        ("Answer: NO.", False),
        ("true", True),
        ("False", False),
        ("I think yes, because ...", True),
        ("The chunk is relevant.", True),
        ("I think the answer is grounded.", True),
        ("Nope", False),
        ("This passage seems irrelevant here.", False),
        ("It is not really useful.", False),
        ("", None),
        ("maybe", None),
        ("The weather is nice.", None),
    ],
)
def test_parse_yes_no(text, expected):
    assert parse_yes_no(text) is expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("score: 8/10", 8.0),
        ("Score: 7", 7.0),
        ('{"score": 9, "reason": "ok"}', 9.0),
        ("8 out of 10", 8.0),
        ("4/5", 8.0),
        ('```json\n{"score": "6"}\n```', 6.0),
        ("I'd give it a 15", None),
        ("12", 10.0),
        ("score -3", 0.0),
        ("no idea", None),
        ("", None),
    ],
)
def test_parse_score(text, expected):
    assert parse_score(text) == expected


def test_extract_json_handles_prose_fences_and_sloppy_json():
    assert extract_json_object('Here you go: {"a": {"b": "}"}} trailing') == {"a": {"b": "}"}}
    assert extract_json_object("{'query': 'x',}") == {"query": "x"}
    assert extract_json_object("no json here") is None


def test_parse_model_validates_against_schema():
    assert parse_model(RelevanceGrade, '{"relevant": "yes"}') == RelevanceGrade(relevant=True)
    assert parse_model(GroundednessGrade, {"grounded": False}).grounded is False
    assert parse_model(RelevanceGrade, '{"other": 1}') is None


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"query": "castle varen founding year"}', "castle varen founding year"),
        ("Rephrased question: castle varen founding year", "castle varen founding year"),
        ('"castle varen founding"', "castle varen founding"),
        ("Query:\ncastle founding", "castle founding"),
        ("", None),
    ],
)
def test_parse_free_text_field(text, expected):
    assert parse_free_text_field(text, "query") == expected


async def test_short_replies_are_read_on_the_loop_and_long_ones_in_a_worker_thread():
    import threading

    from rags_expert.llm.parsing import INLINE_CHARS, read_off_loop

    def where(_text: str) -> int:
        return threading.get_ident()

    short, long = "x" * INLINE_CHARS, "x" * (INLINE_CHARS + 1)
    assert await read_off_loop(len(short), where, short) == threading.get_ident()
    assert await read_off_loop(len(long), where, long) != threading.get_ident()
