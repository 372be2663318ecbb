"""The lexical side of the evidence: terms, sentences, answer types."""

from __future__ import annotations

import pytest

from rags_expert.evidence import AnswerType, expected_type, holds_answer, question_terms, split_sentences, terms


def test_terms_are_stemmed_content_words_with_numbers_normalised() -> None:
    assert terms("The mill was founded by Edmund Slate in 1823.") == {"mill", "found", "edmund", "slate", "1823"}
    assert terms("an altitude of 2,410 metres") == terms("altitude 2410 metre")


@pytest.mark.parametrize(
    ("british", "american"),
    [
        ("coloured output", "colored output"),
        ("the default behaviour", "the default behavior"),
        ("serialise it", "serialize it"),
        ("initialisation order", "initialization order"),
        ("analysed logs", "analyzed logs"),
        ("34 metres", "34 meters"),
        ("a metre", "a meter"),
        ("the package catalogue", "the package catalog"),
    ],
)
def test_british_and_american_spellings_share_their_terms(british: str, american: str) -> None:
    assert terms(british) == terms(american)


def test_short_words_that_only_look_british_keep_their_own_terms() -> None:
    assert terms("four hours") == {"four", "hour"} and terms("your tour") == {"tour"}
    assert terms("promise") != terms("premise")


@pytest.mark.parametrize(
    ("words", "identifier"),
    [
        ("the trusted host middleware", "TrustedHostMiddleware"),
        ("a websocket exception", "WebSocketException"),
        ("the HTTP exception", "HTTPException"),
        ("gzip middleware", "GZipMiddleware"),
        ("the console renderer", "structlog.dev.ConsoleRenderer"),
    ],
)
def test_a_camel_case_identifier_holds_the_terms_of_its_parts(words: str, identifier: str) -> None:
    assert terms(words) <= terms(identifier)


def test_plural_acronyms_and_plain_words_are_not_split() -> None:
    assert terms("APIs and URLs") == {"api", "url"}
    assert terms("Middleware") == {"middlewar"}


def test_question_terms_drop_question_words() -> None:
    assert question_terms("In what year was the Zephyr light automated?") == {"zephyr", "light", "autom"}
    assert question_terms("Who founded Brassica Mill?") == {"found", "brassica", "mill"}


def test_sentences_split_on_ends_not_on_abbreviations_or_decimals() -> None:
    text = "# Title\n\nKestrel stands on Mt. Arden. Its mirror is 1.8 metres wide! Was it built by J. Smith? Yes."
    assert split_sentences(text) == [
        "Title",
        "Kestrel stands on Mt. Arden.",
        "Its mirror is 1.8 metres wide!",
        "Was it built by J. Smith?",
        "Yes.",
    ]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When was the lighthouse built?", AnswerType.DATE),
        ("In what year did it open?", AnswerType.DATE),
        ("How many workers did it employ?", AnswerType.NUMBER),
        ("How tall is the tower?", AnswerType.NUMBER),
        ("Who founded the mill?", AnswerType.NAME),
        ("Where is the festival held?", AnswerType.NAME),
        ("What colour are the pods?", AnswerType.ANY),
    ],
)
def test_expected_type(question: str, kind: AnswerType) -> None:
    assert expected_type(question) is kind


def test_a_sentence_holds_an_answer_only_with_something_new_of_the_right_type() -> None:
    q = "When was the Zephyr lighthouse built?"
    assert holds_answer("The Zephyr lighthouse was built in 1871 on Gull Rock.", q)
    assert not holds_answer("The Zephyr lighthouse was built on Gull Rock by Mara Quill.", q)
    who = "Who built the Zephyr lighthouse?"
    assert holds_answer("Mara Quill built it.", who)
    assert holds_answer("It was built by the engineer Mara Quill.", who)
    assert not holds_answer("The Zephyr lighthouse was built long ago.", who)
    assert not holds_answer("Since then it has been built up.", who)
    many = "How many workers did the mill employ?"
    assert holds_answer("At its peak it employed 640 workers.", many)
    assert holds_answer("It employed four hundred workers.", many)
    assert not holds_answer("The mill employed workers from the town.", many)


def test_a_package_or_tool_is_answered_by_its_name_an_argument_only_by_code() -> None:
    package = "What extra package do I need on Windows for colored output?"
    assert holds_answer("On Windows you also have to install Colorama for colors.", package)
    assert not holds_answer("On windows you also have to install it for colors.", package)
    argument = "Which argument sets the timeout of the client?"
    assert not holds_answer("The Client object takes a timeout too.", argument)
    assert holds_answer("Pass `connect_timeout=5.0` to the client.", argument)


def test_table_rows_are_sentences_of_their_own() -> None:
    table = "| setting | default |\n|---|---|\n| `retrieval.top_k` | `4` |\n| `llm.model` | `gpt-4o-mini` |"
    assert split_sentences(table)[-2:] == ["| `retrieval.top_k` | `4` |", "| `llm.model` | `gpt-4o-mini` |"]


def test_an_open_question_needs_a_sentence_that_says_something() -> None:
    q = "What does finalize_failure do?"
    assert not holds_answer("Anything else → `finalize_failure`.", q)
    assert holds_answer("`finalize_failure` appends the honest failure message and clears the working state.", q)


@pytest.mark.parametrize(
    ("sentence", "question", "holds"),
    [
        ("Its tower is 34 metres tall.", "How tall is the lighthouse?", True),
        ("It was built in 1871 on Gull Rock.", "How tall is the lighthouse?", False),  # a bare year is no height
        ("It was first held in 1986, organised by a fiddler.", "How many days does it last?", False),
        ("The festival lasts four days.", "How long does the festival last?", True),
        ("He tended the lamp for twenty-six years.", "How long did he tend the lamp?", True),
        ("In 2019 it drew a crowd of 18,000 people.", "How many people came in 2019?", True),
        ("In 2019 the harbour was dredged.", "How many people came in 2019?", False),  # the question's own number
        ("A ticket costs £12.", "How much does a ticket cost?", True),
        ("Prices rose by 12%.", "How much did prices rise?", True),
        ("Someone said so.", "How many people said so?", False),  # "one" inside a word is no number
    ],
)
def test_a_number_answer_is_a_quantity_with_its_unit(sentence: str, question: str, holds: bool) -> None:
    assert holds_answer(sentence, question, AnswerType.NUMBER) is holds


def test_the_empty_string_is_a_default_value() -> None:
    """``''`` is a setting's value as much as ``'app_'`` is: a default-value question is answered by it."""
    question = "What is the default env_prefix in pydantic-settings?"
    assert holds_answer("The default `env_prefix` is `''` (empty string).", question)
    assert holds_answer('The prefix defaults to "".', question)
    assert not holds_answer("The prefix is read from the model's configuration.", question)
    assert not holds_answer("Is the default `''`?", "Is the default env_prefix '' in pydantic-settings?")
