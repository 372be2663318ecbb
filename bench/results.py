"""One JSON file per benchmark table, the source of docs/benchmarks.md (``python bench/report.py``).

A benchmark given ``--record`` writes each table it prints to ``bench/results/<name>.json`` (or ``--record DIR``),
with the command that produced it, the commit it ran on, the date and the machine; what it prints is unchanged::

    {"benchmark": "real_docs_test", "title": "...", "command": "python bench/real_docs.py --split test",
     "commit": "<git rev-parse HEAD>", "uncommitted": false, "measured": "2026-11-28",
     "machine": "2 CPUs (x86_64), Python 3.11, load average 1.2 / 0.9 / 0.8", "notes": "...",
     "columns": ["corpus", ...], "rows": [["starlette", "67%", ...], ...]}

Files carried over from docs/benchmarks-history.md instead of measured again also say ``"source"``: the history's
section they were copied from. A new run of the same benchmark replaces its file, and the page says so.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
FIELDS = ("benchmark", "title", "command", "commit", "uncommitted", "measured", "machine", "source", "caption", "notes")


def add_option(parser: argparse.ArgumentParser) -> None:
    """The ``--record [DIR]`` option every recording benchmark takes."""
    parser.add_argument(
        "--record",
        nargs="?",
        const=RESULTS,
        type=Path,
        metavar="DIR",
        help=f"also write each table to DIR/<name>.json (default {RESULTS.relative_to(ROOT)}/) for bench/report.py",
    )


def split_row(line: str) -> list[str]:
    """The cells of one Markdown table line (``\\|`` and a ``|`` inside a code span do not split)."""
    cells, cell, code = [], "", False
    body = line.strip().removeprefix("|").removesuffix("|")
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and body[i + 1 : i + 2] == "|":
            cell, i = cell + "\\|", i + 2
            continue
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
        i += 1
    return [*cells, cell.strip()]


def parse_table(markdown: str) -> tuple[list[str], list[list[str]]]:
    """``(columns, rows)`` of the first Markdown table in the text; the lines around it are ignored."""
    lines = markdown.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("|")), None)
    if start is None:
        raise ValueError("no Markdown table in the text")
    block = []
    for ln in lines[start:]:
        if not ln.lstrip().startswith("|"):
            break
        block.append(ln)
    if len(block) < 2 or set(block[1].replace("|", "").strip()) - set("-: "):
        raise ValueError(f"not a Markdown table: {block[:2]}")
    columns = split_row(block[0])
    rows = [split_row(ln) for ln in block[2:]]
    if any(len(r) != len(columns) for r in rows):
        raise ValueError(f"a row without {len(columns)} cells in the table headed {columns}")
    return columns, rows


def command_line(argv: list[str] | None = None) -> str:
    """How this process was started, as a ``python bench/...`` line without ``--record [DIR]``."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    shown = script.relative_to(ROOT).as_posix() if script.is_relative_to(ROOT) else argv[0]
    rest, args = argv[1:], []
    while rest:
        arg = rest.pop(0)
        if arg.startswith("--record="):
            continue
        if arg == "--record":
            if rest and not rest[0].startswith("-"):
                rest.pop(0)
            continue
        args.append(arg)
    return shlex.join(["python", shown, *args])


def git(*args: str) -> str:
    """The output of a git command in the repository ('' when git is not there)."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S607
    except OSError:
        return ""
    return done.stdout.strip()


def machine() -> str:
    """The cores, architecture, Python and load average of the machine measuring."""
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return (
        f"{os.cpu_count()} CPUs ({platform.machine()}), Python {platform.python_version()}, "
        f"load average {load} (1, 5, 15 min) at the end"
    )


def record(
    directory: Path | None,
    name: str,
    title: str,
    table: str,
    *,
    notes: str = "",
    command: str | None = None,
) -> Path | None:
    """Write one printed Markdown table to ``directory/name.json``; nothing when ``directory`` is None."""
    if directory is None:
        return None
    columns, rows = parse_table(table)
    result: dict[str, Any] = {
        "benchmark": name,
        "title": title,
        "command": command or command_line(),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted": bool(git("status", "--porcelain", "--", "rags_expert", "bench", ":(exclude)bench/results")),
        "measured": datetime.date.today().isoformat(),
        "machine": machine(),
        "notes": notes,
        "columns": columns,
        "rows": rows,
    }
    return write(directory, result)


def write(directory: Path, result: dict[str, Any]) -> Path:
    """Write one result as ``directory/<benchmark>.json``: its fields in the documented order, a row a line."""
    fields = [
        f" {json.dumps(k)}: {json.dumps(result[k], ensure_ascii=False)}" for k in (*FIELDS, "columns") if k in result
    ]
    rows = ",\n".join(f"  {json.dumps(row, ensure_ascii=False)}" for row in result["rows"])
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result['benchmark']}.json"
    path.write_text("{\n" + ",\n".join(fields) + ',\n "rows": [\n' + rows + "\n ]\n}\n", encoding="utf-8")
    print(f"recorded {path}", file=sys.stderr)
    return path


def load(directory: Path = RESULTS) -> list[dict[str, Any]]:
    """Every result in the folder, by name."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))]
