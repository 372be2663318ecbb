"""How long the test suite takes: README command 2 (what CI runs) and the fast loop, before and after a change.

    python bench/suite_time.py --before REV            # both commands on REV (a clone) and on this checkout
    python bench/suite_time.py --before REV --record   # ... and write the tables for bench/report.py
    python bench/suite_time.py --junit "full, before=a.xml" --junit "full, after=b.xml"   # summarise runs made

Each run is ``python -m pytest tests -q -p no:cacheprovider --junitxml=FILE`` (with ``-m "not slow"`` for the fast
loop) in its checkout, with the pytest options that checkout's pyproject.toml gives: the suite's own command, as a
user and CI run it. The JUnit XML file has every test's time (set-up, call and tear-down) and the run's wall time;
the tables are the count of tests and the seconds of each run (the whole command; with ``--junit``, the session's
time the file holds, from pytest's start of collection), and the ten slowest tests of the full suite.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results  # noqa: E402

ROOT = results.ROOT
COMMANDS = {"full": ["tests", "-q"], "fast": ["tests", "-q", "-m", "not slow"]}
SHOWN = {"full": "python -m pytest tests -q", "fast": 'python -m pytest tests -q -m "not slow"'}
SLOWEST = 10


@dataclass
class Run:
    """One pytest run, read back from its JUnit XML file."""

    label: str
    seconds: float
    tests: int
    skipped: int
    failed: int
    times: list[tuple[float, str]] = field(default_factory=list)  # (seconds, test), slowest first


def case_name(case: ET.Element) -> str:
    """``folder/test_module.py::test[param]`` of a test case (without the ``@group`` pytest-xdist adds)."""
    name = re.sub(r"@[^\]\[]*$", "", case.get("name", ""))
    module = case.get("classname", "").removeprefix("tests.")
    return f"{module.replace('.', '/')}.py::{name}" if module else name


def read(label: str, path: Path) -> Run:
    """The counts, wall time and per-test times of one JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    cases = [c for s in suites for c in s.iter("testcase")]
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    times = sorted(((float(c.get("time") or 0), case_name(c)) for c in cases), reverse=True)
    wall = sum(float(s.get("time") or 0) for s in suites)
    return Run(label, wall, len(cases), skipped, failed, times)


def run_pytest(checkout: Path, which: str, junit: Path) -> float:
    """Run one of the suite's commands in ``checkout`` (its code first on the path), writing ``junit``; the seconds
    it took, from the process's start to its end."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    # the shared test data lies beside this checkout: a clone elsewhere must find it too (tests/helpers/shared_data.py)
    env.setdefault("RAGS_EXPERT_SHARED_DATA", str(ROOT.parent / "shared" / "data"))
    cmd = [sys.executable, "-m", "pytest", *COMMANDS[which], "-p", "no:cacheprovider", f"--junitxml={junit}"]
    print(f"{checkout} $ {SHOWN[which]}", file=sys.stderr, flush=True)
    started = time.monotonic()
    subprocess.run(cmd, cwd=checkout, env=env, check=False, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def clone(rev: str, into: Path) -> Path:
    """A clone of this repository at ``rev`` (committed code only)."""
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(into)], check=True)  # noqa: S607
    subprocess.run(["git", "-C", str(into), "checkout", "-q", rev], check=True)  # noqa: S607
    return into


def counts_table(runs: list[Run]) -> str:
    lines = ["| run | tests | passed | skipped | failed | seconds |", "|---|---|---|---|---|---|"]
    for r in runs:
        passed = r.tests - r.skipped - r.failed
        lines.append(f"| {r.label} | {r.tests} | {passed} | {r.skipped} | {r.failed} | {r.seconds:.0f} |")
    return "\n".join(lines)


def slowest_table(runs: list[Run]) -> str:
    """The ten slowest tests of each run, side by side."""
    head = " | ".join(f"{r.label}: test | s" for r in runs)
    lines = [f"| # | {head} |", "|---|" + "---|---|" * len(runs)]
    for i in range(SLOWEST):
        cells = []
        for r in runs:
            seconds, name = r.times[i] if i < len(r.times) else (0.0, "")
            cells += [f"`{name}`" if name else "", f"{seconds:.1f}" if name else ""]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the commands on this commit (a clone), first")
    parser.add_argument("--only", choices=sorted(COMMANDS), help="run only this command (default: both)")
    parser.add_argument(
        "--junit", action="append", default=[], metavar="LABEL=FILE", help="summarise this run's JUnit XML instead"
    )
    parser.add_argument("--notes", default="", help="a sentence for the recorded tables")
    results.add_option(parser)
    args = parser.parse_args(argv)

    runs: list[Run] = []
    if args.junit:
        for spec in args.junit:
            label, _, path = spec.partition("=")
            runs.append(read(label, Path(path)))
    else:
        which = [args.only] if args.only else ["full", "fast"]
        with tempfile.TemporaryDirectory(prefix="suite-") as tmp:
            checkouts = [("after", ROOT)]
            if args.before:
                checkouts.insert(0, ("before", clone(args.before, Path(tmp) / "before")))
            for w in which:
                for label, checkout in checkouts:
                    junit = Path(tmp) / f"{w}-{label}.xml"
                    seconds = run_pytest(checkout, w, junit)
                    run = read(f"{w}, {label}", junit)
                    run.seconds = seconds
                    runs.append(run)

    counts = counts_table(runs)
    full = [r for r in runs if r.label.startswith("full")] or runs
    slowest = slowest_table(full)
    print(counts, slowest, sep="\n\n")
    commands = "; ".join(f"{w}: `{SHOWN[w]}`" for w in COMMANDS)
    notes = " ".join(filter(None, [f"{commands}.", args.notes]))
    argv = list(sys.argv)
    if "--notes" in argv:  # the notes are shown under the table, not in its command
        del argv[argv.index("--notes") : argv.index("--notes") + 2]
    command = results.command_line(argv)
    title = "The test suite: tests and seconds of each run"
    results.record(args.record, "test_suite", title, counts, notes=notes, command=command)
    results.record(
        args.record,
        "test_suite_slowest",
        "The ten slowest tests of the full suite (set-up, call and tear-down)",
        slowest,
        notes="The full runs of the table above.",
        command=command,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
