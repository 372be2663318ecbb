"""Verdicts: a clear yes or no is read; a hedged, uncertain, partial or contradictory reply is unreadable
and the grader's documented default applies (``grading.default_relevant`` / ``default_grounded`` /
``default_useful``, all false), with ``parsed=False``."""

from __future__ import annotations

import pytest

from rags_expert.llm import grading
from rags_expert.llm.parsing import parse_yes_no
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

# (grader, reply, verdict); None = unreadable
PHRASINGS = [
    # relevance, clear yes
    ("relevance", "Yes.", True),
    ("relevance", "Yes, the chunk states the castle was built in 1412.", True),
    ("relevance", "The chunk is relevant.", True),
    ("relevance", "Relevant - it names the founder.", True),
    ("relevance", "Yes. The chunk mentions that the castle had no moat.", True),
    ("relevance", "I think yes, because it gives the year.", True),
    ("relevance", "Is the chunk relevant? Yes.", True),
    ("relevance", "There is no doubt the chunk is relevant.", True),
    ("relevance", '{"relevant": true}', True),
    # relevance, clear no
    ("relevance", "No.", False),
    ("relevance", "No, the chunk is about a bridge, not the castle.", False),
    ("relevance", "The chunk is not relevant to the question.", False),
    ("relevance", "It doesn't seem to be relevant.", False),
    ("relevance", "Nothing in this chunk is relevant.", False),
    ("relevance", "This passage is irrelevant.", False),
    ("relevance", "Not relevant.", False),
    ("relevance", "Is the chunk relevant? No.", False),
    ("relevance", "No relevant information.", False),
    ("relevance", '{"relevant": "no"}', False),
    # relevance, unreadable
    ("relevance", "Maybe.", None),
    ("relevance", "Possibly relevant, it mentions a castle.", None),
    ("relevance", "It is partially relevant.", None),
    ("relevance", "Somewhat relevant.", None),
    ("relevance", "It depends on which castle is meant.", None),
    ("relevance", "Yes and no.", None),
    ("relevance", "Yes, but it is not relevant to the year.", None),
    ("relevance", "I'm not sure whether this chunk is relevant.", None),
    ("relevance", "Hard to say.", None),
    ("relevance", "The chunk is tangentially related at best.", None),
    ("relevance", "It could be relevant.", None),
    ("relevance", "The chunk is not irrelevant.", None),
    ("relevance", '{"relevant": "maybe", "reason": "Yes it names a castle"}', None),
    ("relevance", "N/A", None),
    ("relevance", "The weather is nice today.", None),
    # grounded, clear yes / no
    ("grounded", "Yes, every claim is supported by chunk 1.", True),
    ("grounded", "The answer is grounded.", True),
    ("grounded", "Grounded: yes", True),
    ("grounded", "No. The year 1413 is not supported by the chunks.", False),
    ("grounded", "The answer is not grounded in the documents.", False),
    ("grounded", "Ungrounded.", False),
    ("grounded", "grounded = false", False),
    # grounded, unreadable
    ("grounded", "I cannot determine whether the answer is grounded.", None),
    ("grounded", "I can't tell if the answer is grounded.", None),
    ("grounded", "The answer is hardly grounded.", None),
    ("grounded", "Barely grounded.", None),
    ("grounded", "It is mostly grounded.", None),
    ("grounded", "The answer is partly supported.", None),
    ("grounded", "Unclear.", None),
    ("grounded", "I am unable to verify the claims.", None),
    ("grounded", "The answer is not fully grounded.", None),
    ("grounded", "Yes, the answer is grounded. No, it is not.", None),
    ("grounded", "Probably grounded.", None),
    # useful, clear yes / no
    ("useful", "Yes, it answers the question.", True),
    ("useful", "The answer is useful.", True),
    ("useful", "Useful.", True),
    ("useful", "Nope", False),
    ("useful", "No - the date is missing.", False),
    ("useful", "It is not really useful.", False),
    ("useful", "The answer is useless.", False),
    ("useful", "false", False),
    ("useful", "Not at all.", False),
    ("useful", "Definitely not.", False),
    # useful, unreadable
    ("useful", "Kind of useful.", None),
    ("useful", "It is somewhat useful but misses the year.", None),
    ("useful", "I don't know.", None),
    ("useful", "Perhaps.", None),
    ("useful", "Useful unless the user meant the other castle.", None),
    ("useful", "To some extent.", None),
    ("useful", "Not sure.", None),
]


@pytest.mark.parametrize(("kind", "reply", "expected"), PHRASINGS)
def test_parse_yes_no_reads_clear_verdicts_only(kind, reply, expected):
    assert parse_yes_no(reply) is expected


def test_the_table_covers_both_directions_for_every_grader():
    for kind in ("relevance", "grounded", "useful"):
        verdicts = {expected for k, _, expected in PHRASINGS if k == kind}
        assert verdicts == {True, False, None}, kind


GRADERS = {
    "relevance": lambda model, ctx: grading.grade_relevance(model, "When was Castle Varen built?", "Built 1412.", ctx),
    "grounded": lambda model, ctx: grading.grade_grounded(model, '<chunk n="1">Built 1412.</chunk>', "1412 [1]", ctx),
    "useful": lambda model, ctx: grading.grade_useful(model, "When was Castle Varen built?", "In 1412 [1].", ctx),
}


@pytest.mark.parametrize("default", [False, True])
@pytest.mark.parametrize(("kind", "reply", "expected"), PHRASINGS)
async def test_graders_apply_the_documented_default_to_unreadable_verdicts(kind, reply, expected, default):
    settings = RagsExpertSettings(
        grading={
            "structured_output": "text",
            "default_relevant": default,
            "default_grounded": default,
            "default_useful": default,
        }
    )
    model = ScriptedChatModel(responder=lambda text, kwargs: reply)
    verdict = await GRADERS[kind](model, grading.GradingContext.from_settings(settings))
    assert verdict.parsed is (expected is not None)
    assert verdict.value is (default if expected is None else expected)
