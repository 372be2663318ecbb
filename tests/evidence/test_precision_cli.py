"""The ``small`` profile's precision and recall on documentation written like a real library's, through
``rags-expert ask`` (a subprocess, a scripted model over real HTTP, e5): the causes of wrong successes and of
missed answers found on the real-documentation benchmark's dev half, each on pages of our own ("flightdeck").

* a draft that changes a number (a neighbouring version) is not accepted, the right sentence is quoted instead;
* a MyST admonition (```` ```{note} ````) is prose that may answer, not code;
* a parameter list item under the ``GZipMiddleware`` section is about the gzip middleware, although it opens
  with the parameter's name;
* a name the page says in another chunk ("… in Flightdeck") need not be repeated by the answering chunk, but
  a name absent from the page is never allowed as a paraphrase (a sentence about another library's logger);
* a draft built on a neighbouring unit (the cache directory's variable for a question the settings file's sentence
  answers) is not accepted; the sentence that answers is quoted instead;
* "What is X?" is answered by a sentence saying what X is, not by one that only mentions it, nor by a bare link;
* a fact stated under a condition naming another option ("If used with `--quiet`, …") does not answer a question
  about `--check` alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli_run import cli_env, run_cli

from evidence.test_technical_docs_cli import E5, ask

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PAGES = {
    "changes.md": """# Version history

## Python 2

Flightdeck formatted Python 2 code for years. Flightdeck removed support for formatting Python 2 code in
version 22.0. Version 22.1 added the `--preview` flag.
""",
    "notebooks.md": """# Notebooks

To read notebooks, install flightdeck with the `jupyter` extra:

```sh
pip install "flightdeck[jupyter]"
```

```{note}
:class: tip
Without the `jupyter` extra, flightdeck will not be able to read `.ipynb` files.
```
""",
    "middleware.md": """# Middleware

Flightdeck ships middleware classes that wrap an application.

## GZipMiddleware

Compresses responses with GZip when the client says it accepts them. The GZip middleware takes these arguments:

* `compresslevel` - The compression level, from 1 to 9. Defaults to `9`.
* `minimum_size` - Do not compress responses smaller than this size in bytes. Defaults to `500`.
""",
    "threads.md": """# Thread Pool

Flightdeck runs synchronous endpoints in a thread pool to keep the event loop free.

## Where threads are used

Synchronous endpoint functions are called in a worker thread, and so are background tasks written as plain
functions. File responses read their file in a worker thread too, one block at a time, so that a slow disk does
not hold up other requests. Form parsing writes uploaded files to spooled temporary files from a worker thread.
Templates are rendered in a worker thread when they are large. Static files are checked for existence and
their metadata read in a worker thread before the response starts.

## Why it matters

A worker thread that blocks for a long time holds a slot that another request could have used. When every slot
is taken, new work waits until one is free, and the latency of the whole application grows. Long computations
belong in a separate process or a task queue; network calls belong in asynchronous code. Keeping thread work
short keeps the pool available for the calls that cannot be made asynchronous, such as a driver without an
asynchronous interface or a library that only offers blocking reads.

## Limits

The default thread pool size is only 40 tokens.
""",
    "checking.md": """# Checking files

## `--check`

Don't write the files back, just report whether flightdeck would change them.

If used with `--quiet`, flightdeck prints nothing and returns exit code 1 when a file would change.
""",
    "settings.md": """# Flightdeck settings

## Settings file

Settings for flightdeck itself are kept in a `settings.toml` file. You can select a custom path to the file using
the `--settings` option or by setting the `FLIGHTDECK_SETTINGS` environment variable.

## Cache directory

You can select a custom path to the directory using the `--cache-dir` option or by setting the
`FLIGHTDECK_CACHE_DIR` environment variable.
""",
    "community.md": """# Community

Flightdeck has a growing community of pilots who build plugins for it, and Skyport has one too.

These projects have guides for using them with Flightdeck:

- [Skyport](https://skyport.example/docs/integrations/flightdeck)
- [Runway Lights](https://lights.example/flightdeck)
""",
    "index.md": """# Flightdeck

Flightdeck is a toolkit for talking to control towers. Flightdeck runs on Python 3.10 and later.
""",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("precision")
    (root / "docs").mkdir()
    for name, text in PAGES.items():
        (root / "docs" / name).write_text(text)
    done = run_cli(["ingest", str(root / "docs"), "-q"], cli_env(root / "data") | E5)
    assert done.returncode == 0, done.stderr
    return root / "data"


def test_a_draft_with_a_neighbouring_version_is_not_the_answer(kb: Path) -> None:
    question = "In which version was support for formatting Python 2 code removed?"
    rc, out, _ = ask(kb, question, "Flightdeck removed support for formatting Python 2 code in version 22.1 [1].")
    assert "22.1" not in out["answer"], out["answer"]
    assert rc == 0 and "22.0" in out["answer"] and out["answer_kind"] == "extractive"


def test_a_right_version_from_the_model_is_accepted(kb: Path) -> None:
    question = "In which version was support for formatting Python 2 code removed?"
    rc, out, _ = ask(kb, question, "Flightdeck removed support for formatting Python 2 code in version 22.0 [1].")
    assert rc == 0 and out["answer_kind"] == "generated", out["answer"]
    assert "22.0" in out["answer"]


def test_a_myst_note_is_prose_that_answers(kb: Path) -> None:
    rc, out, _ = ask(kb, "What do I need to install so that flightdeck can read .ipynb files?")
    assert rc == 0, out["answer"]
    assert "`jupyter` extra" in out["answer"] and ":class:" not in out["answer"]


def test_an_item_of_a_sections_parameter_list_is_about_its_subject(kb: Path) -> None:
    question = "Below which size in bytes does the gzip middleware not compress responses by default?"
    rc, out, _ = ask(kb, question)
    assert rc == 0, out["answer"]
    assert "`500`" in out["answer"] and "minimum_size" in out["answer"]


def test_a_name_said_elsewhere_on_the_page_need_not_be_repeated(kb: Path) -> None:
    rc, out, _ = ask(kb, "What is the default thread pool size in Flightdeck?")
    assert rc == 0, out["answer"]
    assert "40 tokens" in out["answer"]


def said(out: dict) -> str:
    """The reply without the closest passages a "not found" offers under their own heading (not an answer)."""
    return out["answer"].split("Not found; closest passages")[0]


def test_a_fact_under_another_options_condition_is_not_the_answer(kb: Path) -> None:
    """The page says what happens with `--check` and `--quiet` together, not with `--check` alone: no answer."""
    rc, out, _ = ask(kb, "Which exit code does `--check` return when a file would change?")
    assert rc == 1 and out.get("answer_kind") != "extractive", out["answer"]
    assert "returns exit code 1" not in said(out)  # it may be offered among the closest passages, never as the answer


def test_a_draft_built_on_a_neighbouring_unit_is_not_the_answer(kb: Path) -> None:
    question = "Which environment variable selects a custom path to flightdeck's settings file?"
    draft = "The environment variable `FLIGHTDECK_CACHE_DIR` selects a custom path to the directory [1]."
    rc, out, _ = ask(kb, question, draft)
    assert "FLIGHTDECK_CACHE_DIR" not in out["answer"], out["answer"]
    assert rc == 0 and "`FLIGHTDECK_SETTINGS`" in out["answer"] and out["answer_kind"] == "extractive"


def test_what_is_x_is_answered_by_a_definition(kb: Path) -> None:
    rc, out, _ = ask(kb, "What is Flightdeck?")
    assert rc == 0 and "toolkit for talking to control towers" in out["answer"], out["answer"]


def test_a_bare_link_or_a_mention_is_no_definition(kb: Path) -> None:
    """The pages name Skyport (a link, a sentence about its community) but never say what it is."""
    rc, out, _ = ask(kb, "What is Skyport?")
    assert rc == 1 and out.get("answer_kind") != "extractive", out["answer"]
    assert "skyport.example" not in said(out) and "has one too" not in said(out)
