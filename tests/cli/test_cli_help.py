"""``rags-expert --help`` and every subcommand's ``--help`` are plain text: no reST markup from the docstrings."""

from __future__ import annotations

import re

import pytest
from helpers.cli_run import cli_env, run_cli

from rags_expert.cli import build_parser
from rags_expert.cli.support import OneLineParser, plain_text

MARKUP = re.compile(r"``|:(?:mod|func|class|meth|attr|data|obj|exc|ref|doc):|`\w")


def _subcommands() -> list[str]:
    action = next(a for a in build_parser()._actions if a.dest == "command")
    return list(action.choices)


@pytest.mark.slow
@pytest.mark.parametrize("command", [[], *([name] for name in _subcommands())], ids=lambda c: c[0] if c else "top")
def test_help_is_plain_text(command, tmp_path):
    done = run_cli([*command, "--help"], cli_env(tmp_path / "data"))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"usage: rags-expert {' '.join(command)}".rstrip())
    assert not MARKUP.search(done.stdout), MARKUP.search(done.stdout)
    assert "options:" in done.stdout


@pytest.mark.slow
def test_the_top_help_says_what_the_tool_does_and_its_exit_codes(tmp_path):
    out = run_cli(["--help"], cli_env(tmp_path / "data")).stdout
    flat = " ".join(out.split())
    assert "Answer questions from your documents" in flat
    assert 'Exit codes (every subcommand): 0 done; 1 an honest "nothing found"; 2 an error' in flat


@pytest.mark.slow
def test_a_subcommand_help_opens_with_what_it_does(tmp_path):
    out = run_cli(["ingest", "--help"], cli_env(tmp_path / "data")).stdout
    flat = " ".join(out.split())
    assert (
        "ingest files and folders (.csv .docx .htm .html .ipynb .jsonl .markdown .md .mdx .pdf .rst .tsv .txt) into the knowledge base"
        in flat
    )  # noqa: E501 - every suffix the loaders read


@pytest.mark.parametrize(
    "text, plain",
    [
        ("The ``rags-expert`` command line", "The rags-expert command line"),
        ("see :func:`settings_from_args` and :mod:`rags_expert.cli`", "see settings_from_args and rags_expert.cli"),
        ("a :class:`~rags_expert.secrets.RedactingFilter` here", "a RedactingFilter here"),
        (":doc:`the deploy guide <deploy>` and :py:meth:`!Agent.run`", "the deploy guide and Agent.run"),
        ("`interpreted` and `a link`_", "interpreted and a link"),
        ("*.md files, 5 * 3, a_b, --json", "*.md files, 5 * 3, a_b, --json"),
        (None, None),
    ],
)
def test_plain_text_drops_rest_markup_and_keeps_the_rest(text, plain):
    assert plain_text(text) == plain


def test_descriptions_epilogs_and_argument_help_of_any_subcommand_are_rendered_plain():
    parser = OneLineParser(prog="x", description="The ``x`` tool", epilog="See :mod:`x.y`.")
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("go", help="run :func:`go`", epilog="``--fast`` helps")
    child.add_argument("--fast", action="store_true", help="like ``make -j``")
    text = parser.format_help() + child.format_help()
    assert not MARKUP.search(text), text
    assert "The x tool" in text and "See x.y." in text and "run go" in text and "like make -j" in text
