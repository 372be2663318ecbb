"""Docs-site markup reduction takes linear time: every pattern of the reduction modules, and the whole reduction, on
100 KB adversarial lines (openers that never close, runs a backtracking pattern would try at each position).

Before it was made linear, a 20 KB line of unclosed Hugo openers (``{{< `` repeated) took ~15 s and 100 KB of
``[^`` 12 s; a line of spaces after a table header line, or an ATX heading with 100 KB of spaces inside, minutes.
"""

from __future__ import annotations

import re
import time

import pytest

from rags_expert.retrieval.loaders import markup, roles
from rags_expert.retrieval.loaders.markup import reduce_markup

SIZE = 100_000
BUDGET_S = 2.0
"""Generous: each case takes milliseconds when linear, and seconds to minutes when not."""

PATTERNS = {
    f"{module.__name__.rsplit('.', 1)[-1]}.{name}": value
    for module in (markup, roles)
    for name, value in vars(module).items()
    if isinstance(value, re.Pattern)
} | {f"markup._FRONT_MATTER[{key!r}]": value for key, value in markup._FRONT_MATTER.items()}
"""Every compiled pattern of the reduction (a pattern added later is tested without being named here)."""

WINDOWED = {"markup._ROLE_PREFIX": markup.ROLE_NAME_CHARS}
"""Patterns the module only applies to a bounded window before a position (``\\Z``-anchored): tested so."""


def repeat(unit: str, size: int = SIZE) -> str:
    """``unit`` repeated to ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


OPENERS = [
    "{{< ", "{{%", "{{< a title=\"", "[^", "[^a", "[", "[a]", ":::", "{", "`", "` ", "`a` ", ".:a", ":a:", "{a}",
    "!!! a \"", "=== \"", "|", "|-", "<A ", "<A a", "(", "-8<- \"", "{!", ":material-", ":material-a:{", "{:",
    "{ .", "#", "\"", "'", "/// a |", "import a from ", "export const ", "title=\"", "\\|", "+++", "---", "a <", "<a>",
]  # fmt: skip
"""Pieces that open a construct of the markup, repeated into a line."""

LINES = {
    **{f"{unit!r}*": repeat(unit) for unit in OPENERS},
    **{f"{unit!r}* then x": repeat(unit) + "x" for unit in OPENERS},
    "spaces then x": " " * SIZE + "x",
    "tabs then x": "\t" * SIZE + "x",
    "heading with spaces inside": "# a" + " " * SIZE + "b",
    "role with spaces inside": ":func:`a" + " " * SIZE + "b`",
    "colon chain before a code span": repeat(".:a") + "`x`",
    "brace run before a code span": "{" + "a" * SIZE + "`x`",
    "backtick runs of growing length": "".join("`" * n + " " for n in range(1, 1000))[:SIZE],
}
"""100 KB adversarial lines."""

DOCUMENTS = {
    **{f"line {name}": line for name, line in LINES.items()},
    "spaces after a table header": "a|b\n" + " " * SIZE + "x",
    "tabs after a table header": "a|b\n" + "\t" * SIZE + "x",
    "unclosed fences": repeat("```a\n"),
    "unclosed directives": repeat("```{a}\n"),
    "unclosed colon blocks": repeat(":::a\n"),
    "unclosed slash blocks": repeat("/// a\n"),
    "nested admonitions": "".join("    " * n + "!!! a\n" for n in range(200)),
    "unclosed front matter": "---\n" + repeat("a\n"),
    "code spans in one paragraph": repeat("`a` b "),
}
"""100 KB adversarial pages (single lines, and blocks that never close)."""


def elapsed(run) -> float:
    """CPU seconds ``run()`` takes in this process (other work on shared cores, a second test worker among it, does
    not count: what is measured is how the work grows, not how busy the machine is)."""
    start = time.process_time()
    run()
    return time.process_time() - start


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_pattern_of_the_reduction_is_linear_on_adversarial_lines(name):
    """Each pattern searched from every position of each 100 KB line (``finditer``: what ``sub`` and ``search`` do),
    and matched at its start, within the budget in all."""
    pattern = PATTERNS[name]
    window = WINDOWED.get(name)

    def run() -> None:
        for line in LINES.values():
            if window is None:
                list(pattern.finditer(line))
                pattern.match(line)
            else:
                for end in range(0, len(line), window):
                    pattern.search(line, max(0, end - window), end)

    took = elapsed(run)
    assert took < BUDGET_S, f"{name} took {took:.1f} s on {len(LINES)} lines of {SIZE:,} characters"


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_whole_reduction_is_linear_on_adversarial_pages(name):
    """``reduce_markup`` on each 100 KB adversarial page within the budget."""
    reduce_markup("warm up: the first call imports the directive tables")
    took = elapsed(lambda: reduce_markup(DOCUMENTS[name]))
    assert took < BUDGET_S, f"{name}: {took:.1f} s"


def test_unclosed_shortcodes_and_footnote_marks_still_reduce():
    """What the linear patterns match is what the old ones did: a closed shortcode among unclosed openers goes (its
    title kept), a footnote reference after ``[^`` runs goes, a role's title is kept, a padded delimiter row still
    makes a table."""
    assert reduce_markup('{{< {{< {{< note title="Heads up" >}}text{{< /note >}}') == "{{< {{< Heads uptext"
    assert reduce_markup("[^[^see[^1] it") == "[^[^see it"
    assert reduce_markup("Use :ref:`the guide <guide>` now.") == "Use the guide now."
    assert reduce_markup("a | b\n  | --- | --- |  \n1 | 2") == "\na: 1; b: 2\n"  # a delimiter row padded
