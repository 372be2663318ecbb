"""The answer's category ("which *rock*", "how many *people*") lets one question term go unmatched."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rags_expert.evidence import EvidenceScorer
from rags_expert.evidence.answer_type import answer_category, names_category
from rags_expert.settings import EvidenceSettings


@pytest.mark.parametrize(
    ("question", "category"),
    [
        ("On which rock does the lighthouse stand?", "rock"),
        ("Which company built the bridge?", "compani"),
        ("How many people attended the festival?", "peopl"),
        ("What colour is the door?", "color"),  # British spellings are stemmed as American ones
        ("What did the railway carry?", None),  # "did" is no noun
        ("Which of the keepers stayed longest?", None),
        ("What kind of engine drove the looms?", None),
        ("How much does a ticket cost?", None),
        ("Who built the lighthouse?", None),
        ("Which pre-commit hook formats notebooks?", "hook"),  # a hyphenated modifier is not the noun
        ("Which built-in renderer is the default?", "render"),
        ("What extra package do I need on Windows?", "packag"),  # the code noun, not the modifier before it
        ("Which built-in exception class is raised?", "except"),  # the first code noun after the modifiers
        ("Which environment variable sets the workers?", "variabl"),
    ],
)
def test_answer_category(question: str, category: str | None) -> None:
    assert answer_category(question) == category


@pytest.mark.parametrize(
    ("sentence", "category", "named"),
    [
        ("It was built in 1871 on Gull Rock by Mara Quill.", "rock", True),
        ("The observatory stands on Mount Arden.", "mountain", True),  # mount / mountain share their start
        ("In 2019 it drew a crowd of 18,000 people.", "peopl", True),
        ("Three hundred people came.", "peopl", True),  # number words count as numbers
        ("The Zephyr lighthouse is white.", "lighthous", True),
        ("The rock is grey.", "rock", False),  # the category, but no name or number joined to it
        ("People came from far away.", "peopl", False),
        ("Its keeper was Tobias Venn.", "rock", False),  # no word of the category at all
    ],
)
def test_names_category(sentence: str, category: str, named: bool) -> None:
    assert names_category(sentence, category) is named


LIGHTHOUSE = Document(
    page_content="The Zephyr lighthouse was built in 1871 on Gull Rock by the engineer Mara Quill.",
    metadata={"title": "The Zephyr Lighthouse"},
)


async def _best(question: str) -> str | None:
    match = await EvidenceScorer(EvidenceSettings(), None).best_answer(question, [LIGHTHOUSE])
    return match.sentence if match else None


async def test_a_sentence_naming_the_category_answers_despite_one_paraphrased_term() -> None:
    # "stand" is nowhere in the chunk, but "Gull Rock" names the rock the question asks for
    answers = {
        m.answers
        for m in await EvidenceScorer(EvidenceSettings(), None).matches(
            "On which rock does the Zephyr lighthouse stand?", [LIGHTHOUSE]
        )
    }
    assert answers == {True}


async def test_without_the_category_one_missing_term_still_means_no_answer() -> None:
    # "painted" is nowhere in the chunk and "who" names no category: the chunk cannot say who painted it
    assert await _best("Who painted the Zephyr lighthouse?") is None


async def test_two_missing_terms_are_too_many_even_with_the_category() -> None:
    matches = await EvidenceScorer(EvidenceSettings(), None).matches(
        "On which rock was the Zephyr lighthouse repainted in red?", [LIGHTHOUSE]
    )
    assert not any(m.answers for m in matches)


async def test_a_how_tall_answer_prefers_the_sentence_that_says_tall() -> None:
    doc = Document(
        page_content="The first keeper of the Zephyr lighthouse was Tobias Venn, who tended the lamp for twenty-six "
        "years. Its granite tower is 34 metres tall.",
        metadata={"title": "The Zephyr Lighthouse"},
    )
    best = await EvidenceScorer(EvidenceSettings(), None).best_answer("How tall is the Zephyr lighthouse?", [doc])
    assert best is not None and "34 metres" in best.sentence
    # the bonus only ranks: without it the keeper's twenty-six years come first (both are quantities)
    plain = await EvidenceScorer(EvidenceSettings(measure_bonus=0.0), None).best_answer(
        "How tall is the Zephyr lighthouse?", [doc]
    )
    assert plain is not None and "twenty-six" in plain.sentence
