"""What the evidence reads in a chunk of documentation: units, their labels, code names, answer types."""

from __future__ import annotations

import pytest

from rags_expert.evidence import AnswerType, expected_type, holds_answer
from rags_expert.evidence.code import code_names, new_code
from rags_expert.evidence.units import units

PAGE = """Client > Parameters
The `Client` sends requests. It keeps connections open.

* `timeout` - Seconds to wait. Defaults to `5.0`.
* `retries`: How many times to retry (Default 3).

| Option | Default |
|---|---|
| `pool_size` | `10` |

To send a request:

```python
client.get("https://example.org")  # a comment
```

:::{note}
See {class}`flightdeck.Client` for more.
:::
"""


def test_a_chunk_is_cut_into_headings_sentences_items_rows_and_code() -> None:
    got = [(u.kind, u.text, u.label) for u in units(PAGE)]
    assert got == [
        ("heading", "Client > Parameters", ""),
        ("prose", "The `Client` sends requests.", ""),
        ("prose", "It keeps connections open.", ""),
        ("item", "`timeout` - Seconds to wait. Defaults to `5.0`.", "`timeout`"),
        ("item", "`retries`: How many times to retry (Default 3).", "`retries`"),
        ("heading", "| Option | Default |", ""),
        ("row", "| `pool_size` | `10` |", "| Option | Default |"),
        ("prose", "To send a request:", ""),
        ("code", 'client.get("https://example.org")  # a comment', ""),
        ("prose", "See `flightdeck.Client` for more.", ""),
    ]


def test_lead_ins_and_code_are_not_facts() -> None:
    by_text = {u.text: u for u in units(PAGE)}
    assert not by_text["To send a request:"].factual and by_text["To send a request:"].lead_in
    assert not by_text['client.get("https://example.org")  # a comment'].factual
    assert by_text["It keeps connections open."].factual


def test_a_long_list_item_is_cut_into_sentences_that_keep_its_term() -> None:
    item = "* `max_age` - " + "Session expiry time in seconds. " * 15 + "Defaults to 2 weeks."
    last = units(item)[-1]
    assert last.text == "Defaults to 2 weeks." and last.label == "`max_age`"
    assert last.quote == "`max_age` … Defaults to 2 weeks."


def test_code_names_by_backticks_and_shape() -> None:
    text = "Pass `retries=3` or --line-length, catch KeyError, set APP_ENV, use starlette.config.Config or run()."
    assert code_names(text) == {"retries", "--line-length", "keyerror", "app_env", "starlette.config.config", "run()"}
    assert code_names("e.g. this, i.e. that") == set()


def test_new_code_ignores_the_names_the_question_holds() -> None:
    question = "Which argument of StaticFiles serves index.html for directories?"
    assert new_code("`html` - Automatically loads `index.html` for directories.", question) == {"html"}
    assert new_code("`StaticFiles` serves `index.html`.", question) == set()


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Which argument sets the gate?", AnswerType.CODE),
        ("What exception is raised on a timeout?", AnswerType.CODE),
        ("What is httpx's equivalent of requests' Session?", AnswerType.CODE),
        ("What do I need to install for HTTP/2?", AnswerType.CODE),
        ("What is the default timeout?", AnswerType.VALUE),
        ("Which version removed Python 2 support?", AnswerType.VALUE),
        ("When is the shutdown handler called?", AnswerType.ANY),  # a condition, not a date
        ("When was the lighthouse built?", AnswerType.DATE),
    ],
)
def test_technical_question_types(question: str, kind: AnswerType) -> None:
    assert expected_type(question) is kind


def test_values_and_code_names_answer_their_questions() -> None:
    default = "What is the default pool size?"
    assert holds_answer("| `pool_size` | `10` |", default)
    assert holds_answer("Defaults to 2 weeks.", default)
    assert holds_answer("Defaults to `None`.", default)
    assert not holds_answer("You will see a single line with the host and the port.", default)
    which = "Which argument sets the gate?"
    assert holds_answer("`departure_gate` - the gate a flight leaves from", which)
    assert not holds_answer("The gate is where a flight leaves from.", which)


def test_html_is_markup_not_a_sentence() -> None:
    page = (
        'Intro\n\n<img src="/logo.svg" alt="logo"/> <img src="/dark.svg"/>\n\n<p>The little framework that shines.</p>'
    )
    got = [(u.kind, u.text) for u in units(page)]
    assert ("prose", "The little framework that shines.") in got
    assert not any(u.factual and "<img" in u.text for u in units(page))


async def test_prose_answers_which_category_only_when_it_says_the_category() -> None:
    from langchain_core.documents import Document

    from rags_expert.evidence import EvidenceScorer
    from rags_expert.settings import EvidenceSettings

    scorer = EvidenceScorer(EvidenceSettings(use_embeddings=False))
    question = "Which option sets the number of parallel workers?"

    async def answers(text: str) -> bool:
        matches = await scorer.matches(question, [Document(text, metadata={"title": "Usage"})])
        return any(m.answers for m in matches)

    assert await answers("The `--workers` option sets the number of parallel workers.")
    assert await answers("* `--workers` - sets the number of parallel workers.")  # a parameter list need not say it
    assert not await answers("The `version` input sets the number of parallel workers.")
    assert not await answers("With `--workers` you set the number of parallel workers:")  # a lead-in, no category
    assert await answers("With the `--workers` option you set the number of parallel workers:")


def test_a_chunk_that_opens_inside_a_code_block_keeps_its_code_as_code() -> None:
    got = [(u.kind, u.text) for u in units("```python\nclient = Client(timeout=10)\n```\nThe timeout is in seconds.")]
    assert got == [("code", "client = Client(timeout=10)"), ("prose", "The timeout is in seconds.")]


@pytest.mark.parametrize(
    "text",
    [
        "See the [Library Reference](../library.md#extensions) for more details.",
        "For more information, see `Config`.",
        "To learn more about middleware, see the middleware page.",
        "Refer to the API docs.",
    ],
)
def test_a_pointer_to_another_page_is_no_fact(text: str) -> None:
    (unit,) = units(text)
    assert unit.pointer and not unit.factual


def test_a_sentence_that_merely_starts_alike_is_a_fact() -> None:
    (unit,) = units("Seeding the cache is done by `warm()`.")
    assert not unit.pointer and unit.factual


def test_every_sentence_under_a_code_named_section_is_about_that_section() -> None:
    """A Sphinx settings page (reStructuredText) or an object description: ``Default: `2048``` and a sentence naming
    other code ("When set, `sphinx-build` will not use color") are both said of the section's name, so both carry
    it; a heading and a code line do not."""
    from langchain_core.documents import Document

    from rags_expert.evidence.scorer import _chunk_units

    section = "Settings > Server Socket > `backlog`"
    text = (
        f"{section}\nCommand line: `--backlog INT`\n\nDefault: `2048`\n\nDefault: `'sync'`\n\n"
        "The maximum number of pending connections.\n\n```\ngunicorn --backlog 64\n```"
    )
    found = _chunk_units(Document(page_content=text, metadata={"section": section}))
    labels = {u.text: u.label for u in found}
    assert labels["Default: `2048`"] == labels["Default: `'sync'`"] == "`backlog`"
    assert labels["Command line: `--backlog INT`"] == "`backlog`"
    assert labels["The maximum number of pending connections."] == "`backlog`"
    assert all(u.label == "" for u in found if u.kind in ("heading", "code"))
    described = "Environment > NO_COLOR"
    (unit,) = _chunk_units(
        Document("When set, `sphinx-build` will not use color in terminal output.", metadata={"section": described})
    )
    assert unit.label == "NO_COLOR" and unit.quote.startswith("NO_COLOR")
    prose = "Deployment > Behind a proxy"  # a section named in words labels nothing
    (unit,) = _chunk_units(Document("Set `forwarded_allow_ips` to the proxy's address.", metadata={"section": prose}))
    assert unit.label == ""


def test_a_row_written_with_its_column_names_is_one_unit_even_with_sentences_in_its_cells() -> None:
    text = (
        "Keepalive > Options\n"
        "Options: `KEEPALIVE_TIME`; Description: The interval in milliseconds between PING frames.; "
        "Server Default: 7200000 (2 hours)\n\n"
        "option: retries; default: 3\n\n"
        "A sentence. Another one."
    )
    found = [(u.text, u.kind) for u in units(text)]
    assert found == [
        ("Keepalive > Options", "heading"),
        (
            "Options: `KEEPALIVE_TIME`; Description: The interval in milliseconds between PING frames.; "
            "Server Default: 7200000 (2 hours)",
            "row",
        ),
        ("option: retries; default: 3", "row"),
        ("A sentence.", "prose"),
        ("Another one.", "prose"),
    ]
