"""Lines of ``rags_expert/evidence/`` by file at two revisions: before issue 35's reader and now.

Issue 35 asks the reader to replace hand rules, so that the package ends smaller than it was. This counts every
line (as ``wc -l`` does) of each Python file under the package at each revision from git's objects (the working tree
is not read, so the count is that of a commit), and says which rule modules shrank or grew.

    python bench/evidence_size.py                     # bab596c^ (the last commit before the reader) against HEAD
    python bench/evidence_size.py --before REV --after REV --record
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

PACKAGE = "rags_expert/evidence"
BEFORE = "bab596c^"
"""The parent of the first commit of issue 35's work (bench/reader_signals.py, 2026-11-28)."""


def lines(rev: str) -> dict[str, int]:
    """Lines of each ``.py`` file of the package at ``rev`` (file name → lines)."""
    names = bench_results.git("ls-tree", "--name-only", rev, f"{PACKAGE}/").splitlines()
    if not names:
        sys.exit(f"error: no {PACKAGE}/ at {rev!r} (is it a commit of this repository?)")
    counts = {}
    for name in names:
        if name.endswith(".py"):
            text = bench_results.git("show", f"{rev}:{name}")
            counts[Path(name).name] = text.count("\n") + 1 if text else 0  # git() strips the last newline
    return counts


def table(before: str, after: str) -> str:
    """A Markdown table: a row per revision and one of the change, a column per file and the total."""
    old, new = lines(before), lines(after)
    names = sorted(old.keys() | new.keys(), key=lambda n: (n in ("reader.py", "likelihood.py", "__init__.py"), n))
    head = "| revision | " + " | ".join(f"`{n}`" for n in names) + " | all |"
    rule = "|---" * (len(names) + 2) + "|"

    def shown(counts: dict[str, int]) -> list[str]:
        return [str(counts[n]) if n in counts else "—" for n in names] + [f"**{sum(counts.values())}**"]

    change = [f"{new.get(n, 0) - old.get(n, 0):+d}" for n in names] + [
        f"**{sum(new.values()) - sum(old.values()):+d}**"
    ]
    rows = [[before, *shown(old)], [after, *shown(new)], ["change", *change]]
    return "\n".join([head, rule, *("| " + " | ".join(r) + " |" for r in rows)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help=f"the earlier revision (default {BEFORE})")
    parser.add_argument("--after", default="HEAD", help="the later revision (default HEAD)")
    bench_results.add_option(parser)
    args = parser.parse_args()
    after = bench_results.git("rev-parse", "--short", args.after) or args.after
    shown = table(args.before, after)
    print(shown)
    bench_results.record(
        args.record,
        "reader_evidence_size",
        "Lines of `rags_expert/evidence/` before the reader and now",
        shown,
        notes=(
            f"Every line of each .py file, counted from git's objects ({args.before}: the last commit before issue "
            "35's work). reader.py (the selector and calibrator) and its weights file are new; likelihood.py was "
            "there before (the question-likelihood scorer). The rule modules (answer_type, scorer, text, units, "
            "code, rerank) are what the reader was to replace."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
