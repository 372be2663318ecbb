"""README command 1 on a fresh clone (issue 54): seconds from the command's start to the first answer, step by step.

The command is read from the README (the line after ``# 1.`` in "Set-up"), so what is timed is what a newcomer runs.
The repository's committed state is cloned into a temporary folder (``git clone`` of this checkout: its HEAD), with
an empty HOME (so the default data folder is new) and ``PIP_NO_CACHE_DIR=1`` (nothing from an earlier install), and
the command runs there in one bash, each ``&&`` step timed apart. The install needs the package index; the rest is
offline.

    python bench/first_answer.py [--record]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import results as bench_results  # noqa: E402


def readme_command() -> str:
    """README command 1, as the README writes it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^# 1\..*\n(.+)$", text, re.M)
    if found is None:
        raise SystemExit("README.md has no '# 1.' command")
    return found.group(1).strip()


def shown(step: str) -> str:
    """A step as the table shows it (the question shortened)."""
    return re.sub(r'ask --local ".*"', 'ask --local "<the README\'s question>"', step)


def main() -> int:
    """Clone, run the command step by step, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_results.add_option(ap)
    args = ap.parse_args()
    command = readme_command()
    steps = command.split(" && ")
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp / "clone")], check=True)  # noqa: S607
        (tmp / "home").mkdir()
        marks = tmp / "marks"
        script = ["set -e", f"cd {shlex.quote(str(tmp / 'clone'))}", f"echo start $(date +%s.%N) > {marks}"]
        for i, step in enumerate(steps):
            script += [step, f"echo {i} $(date +%s.%N) >> {marks}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "VIRTUAL_ENV", "PYTHON"))}
        env.update(HOME=str(tmp / "home"), PIP_NO_CACHE_DIR="1")
        env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)
        started = time.perf_counter()
        done = subprocess.run(["bash", "-c", "\n".join(script)], env=env, capture_output=True, text=True)
        total = time.perf_counter() - started
        times = [float(line.split()[1]) for line in marks.read_text().splitlines()]
    print(done.stderr[-3000:])
    print(done.stdout[-1500:])
    rows = ["| step | s | since start |", "|---|---|---|"]
    for i, step in enumerate(steps[: len(times) - 1]):
        rows.append(f"| `{shown(step)}` | {times[i + 1] - times[i]:.1f} | {times[i + 1] - times[0]:.1f} |")
    rows.append(f"| first answer (exit {done.returncode}) | | {total:.1f} |")
    table = "\n".join(rows)
    print(table)
    title = "README command 1 on a fresh clone: seconds to the first answer, step by step"
    notes = "A fresh clone of HEAD, an empty HOME, PIP_NO_CACHE_DIR=1; the command read from the README."
    bench_results.record(args.record, "first_answer", title, table, notes=notes)
    return 0 if done.returncode in (0, 1) else done.returncode


if __name__ == "__main__":
    sys.exit(main())
