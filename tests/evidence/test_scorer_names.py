"""The evidence scorer and the question's names: a name is not said in other words, nor made new by its module.

The paraphrase allowance lets a unit holding a new code name answer although its page lacks one or two of the
question's words ("serves" for "loads"). A name of the question (a capitalised word: another library, a
product) is not such a word: a sentence about wrapping *a* logger does not answer how to use *Skyqueue's* task
logger. A name that another chunk of the same page says is that page's subject, though, and counts as held.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rags_expert.evidence import EvidenceScorer
from rags_expert.settings import EvidenceSettings


class Same(Embeddings):
    """Every text gets the same vector: cosine 1.0, the paraphrase allowance at its most generous."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def doc(source: str, text: str) -> Document:
    return Document(page_content=text, metadata={"source": source, "title": source})


QUESTION = "How do I use flightdeck with the logger returned by Skyqueue's task helper?"
LOGGING = doc(
    "logging.md",
    "Use `flightdeck.wrap_logger` with any logger returned by a helper, and flightdeck binds its context to it.",
)
NEIGHBOURS = [doc("queues.md", "Skyqueue runs jobs in worker processes."), doc("index.md", "Skyqueue is a job queue.")]


async def test_an_absent_name_is_never_a_paraphrase() -> None:
    scorer = EvidenceScorer(EvidenceSettings(min_answer_score=0.0), Same())
    match = await scorer.best_answer(QUESTION, [LOGGING, *NEIGHBOURS])
    assert match is None or "wrap_logger" not in match.sentence


async def test_without_the_name_the_same_sentence_answers() -> None:
    scorer = EvidenceScorer(EvidenceSettings(min_answer_score=0.0), Same())
    match = await scorer.best_answer("How do I use flightdeck with the logger returned by a task helper?", [LOGGING])
    assert match is not None and "wrap_logger" in match.sentence


async def test_a_name_another_chunk_of_the_page_says_counts_as_held() -> None:
    scorer = EvidenceScorer(EvidenceSettings(min_answer_score=0.0), Same())
    page_top = doc("logging.md", "Skyqueue tasks log through their own task helper, which returns a logger.")
    match = await scorer.best_answer(QUESTION, [LOGGING, page_top, *NEIGHBOURS])
    assert match is not None and "wrap_logger" in match.sentence


async def test_the_questions_own_name_spelled_out_is_no_new_code_name() -> None:
    """``flightdeck.tasks.get_task_logger()`` is the question's ``get_task_logger``: it earns no allowance."""
    scorer = EvidenceScorer(EvidenceSettings(min_answer_score=0.0), Same())
    tasks = doc(
        "tasks.md",
        "Tasks ship helpers in the form of `flightdeck.tasks.get_task_logger()` that you should use inside of tasks "
        "to keep their records.",
    )
    question = "How do I use flightdeck with the logger returned by get_task_logger?"
    assert await scorer.best_answer(question, [tasks]) is None


def test_a_fact_under_a_condition_naming_other_code_is_no_answer_to_a_question_without_it():
    from rags_expert.evidence.code import condition_clause, under_other_condition

    sentence = (
        "If you want to use the same file (for example, `sys.stdout` or `sys.stderr`) for both loggers and "
        "`logging.StreamHandler` output, you must use `WriteLogger`."
    )
    assert condition_clause(sentence).endswith("`logging.StreamHandler` output")  # the bracket's comma is inside
    assert under_other_condition(sentence, "How do I print to stderr rather than stdout?")
    quiet = "If used with `--quiet`, only errors are shown."
    assert under_other_condition(quiet, "What does --check show?")
    assert not under_other_condition(quiet, "What does --check show with --quiet?")
    assert not under_other_condition("If you want to serve files, use `StaticFiles`.", "How do I serve files?")
    assert not under_other_condition("Use `StaticFiles`, if you want to serve files.", "How do I serve files?")


def test_what_is_x_needs_a_sentence_saying_what_x_is():
    from rags_expert.evidence.answer_type import defines, holds_answer
    from rags_expert.evidence.units import units

    assert holds_answer("*Starlette* is a lightweight ASGI framework.", "What is Starlette?")
    assert holds_answer("Black, a formatter for Python, rewrites code.", "What is Black?")
    assert not holds_answer("Starlette has a rapidly growing community of developers.", "What is Starlette?")
    assert not holds_answer("Starlette-Compress is a fast middleware for Starlette.", "What is Starlette?")
    assert defines("Processors are the core of structlog.", "processors")
    alias = "What is the CamelCase alias of structlog.get_logger?"  # a property of something, not a definition
    harmony = (
        "To keep your CamelCase harmony, structlog offers `structlog.getLogger` which works exactly like the original."
    )
    assert holds_answer(harmony, alias)
    link, sentence = units(
        "- [Strawberry](https://strawberry.example/starlette)\n- Strawberry has [its own docs](https://x.org) for it."
    )
    assert link.link_only and not link.factual and sentence.factual


async def test_the_kind_of_a_code_name_need_not_be_on_the_page() -> None:
    """ "the `tab_width` *option*" is documented as "the `tab_width` keyword"; the "field" of ``attrs.field`` is part
    of a name, not a kind of name, and stays a term the page must hold."""
    from rags_expert.evidence.answer_type import AnswerType
    from rags_expert.evidence.scorer import _type_nouns

    page = doc("library.md", "The `tab_width` keyword sets the width of tabs in the source.\nThe default value is `4`.")
    scorer = EvidenceScorer(EvidenceSettings(use_embeddings=False, min_answer_score=0.0))
    match = await scorer.best_answer("What is the default value of the tab_width option?", [page])
    assert match is not None and match.sentence == "The default value is `4`."
    assert "field" not in _type_nouns(AnswerType.DATE, None, "In which release was attrs.field added?")
