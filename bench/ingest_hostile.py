"""Peak memory and time of ``rags-expert ingest`` on hostile files (issue 53), before and after the loaders' bounds.

Each file is written here (none is committed) and ingested alone by ``rags-expert ingest FILE -q`` in a process of
its own, with a fresh data folder and the wordllama embeddings; its peak RSS is the child's ``ru_maxrss`` (as
``tests/cli/test_ingest_memory.py`` reads it). ``--before DIR`` runs the same on another checkout (the code before
the bounds, e.g. ``git worktree add /tmp/before 63c0436``) for the "before" column; a run past ``--timeout`` seconds
is killed and reported as such.

* a ``.docx`` decompression bomb: a 1 MB file whose media part inflates to 1,024 MiB;
* a one-page PDF ruled as graph paper, 120 by 120 lines (6.5 KB, read with the ``pdf`` extra's table finder);
* a Markdown file of one 100 KB line of unclosed Hugo openers (``{{< `` repeated);
* a Markdown file of one 100 KB line of ``[^``.

    python bench/ingest_hostile.py [--before DIR] [--timeout 180] [--record]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record

import results as bench_results  # noqa: E402
from helpers.cli_run import cli_env  # noqa: E402
from helpers.pdf import graph_paper_pdf  # noqa: E402
from helpers.word import bomb  # noqa: E402

MEASURE = """
import resource, subprocess, sys, time
started = time.monotonic()
try:
    done = subprocess.run([sys.executable, "-m", "rags_expert.cli", *sys.argv[2:]], capture_output=True, text=True,
                          timeout=float(sys.argv[1]))
    code, output = done.returncode, done.stderr + done.stdout
except subprocess.TimeoutExpired:
    code, output = "killed", ""
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, round(time.monotonic() - started, 1))
print(output, end="")
"""

FILES: list[tuple[str, str, Callable[[], bytes]]] = [
    ("a .docx bomb (1,024 MiB inflated)", "bomb.docx", lambda: bomb("A decompression bomb.", inflated_mb=1024)),
    ("a PDF page ruled as graph paper (120 × 120 lines)", "grid.pdf", lambda: graph_paper_pdf(120)),
    ("100 KB line of unclosed Hugo openers", "hugo.md", lambda: ("{{< " * 25_000 + "\n").encode()),
    ("100 KB line of `[^`", "footnotes.md", lambda: ("[^" * 50_000 + "\n").encode()),
]


def measure(code: Path, path: Path, data_dir: Path, timeout: float) -> tuple[str, str]:
    """``(peak RSS and time, the first line ingest printed)`` of one ingest of ``path`` with the code at ``code``."""
    env = cli_env(data_dir)
    env["PYTHONPATH"] = str(code)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(timeout), "ingest", str(path), "-q"],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    first, _, output = done.stdout.partition("\n")
    status, mb, seconds = first.split()
    if status == "killed":
        return f"killed after {seconds} s ({mb} MB so far)", ""
    said = output.splitlines()[0] if output.strip() else ""
    return f"{int(mb):,} MB, {float(seconds):.1f} s", said.replace(str(path.parent) + "/", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the code before the bounds (the 'before' column)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before one ingest is killed")
    bench_results.add_option(parser)
    args = parser.parse_args()
    before_commit = ""
    if args.before:
        before_commit = subprocess.run(
            ["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, name, build in FILES:
            path = folder / "docs" / name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(build())
            size = f"{path.stat().st_size / 1000:,.0f} KB"
            cells = [label, size]
            if args.before:
                cells.append(measure(args.before, path, folder / f"before-{name}", args.timeout)[0])
            after, said = measure(ROOT, path, folder / f"after-{name}", args.timeout)
            cells += [after, f"`{said}`" if said else "–"]
            rows.append(cells)
            path.unlink()
            print(" | ".join(cells), file=sys.stderr, flush=True)
    columns = ["file", "size"]
    columns += [f"peak RSS, time before ({before_commit})"] if args.before else []
    columns += ["peak RSS, time after", "what ingest says after"]
    table = "\n".join(
        [
            "| " + " | ".join(columns) + " |",
            "|" + "---|" * len(columns),
            *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows),
        ]
    )
    print(table)
    bench_results.record(
        args.record,
        "ingest_hostile",
        "Peak memory and time of one `ingest` on hostile files, before and after the loaders' bounds (wordllama)",
        table,
        notes="Each file ingested alone in a fresh data folder with the default bounds (`ingestion.max_unzipped_mb` "
        '100, `ingestion.pdf_max_table_crossings` 5000; docs/retrieval.md, "Bounds on each file"). The time is '
        "the whole command's, its start (about 3 s) included.",
    )


if __name__ == "__main__":
    start = time.monotonic()
    main()
    print(f"took {time.monotonic() - start:.0f} s", file=sys.stderr)
