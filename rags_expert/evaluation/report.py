"""An evaluation's report: the metrics of a group of results, the terminal table, ``report.json`` and the PNG.

``report.json`` holds ``format``, ``meta`` (the question file, the model, how answers were judged, when),
``summary`` (every metric over all questions), ``groups`` (the same per ``kind: ...`` and ``tag: ...``) and
``results`` (every question's answer, sources, citations, verdict, timings: :class:`~.scoring.Result`).

While a run goes on, :class:`RunReport` rewrites ``report.partial.json`` (the same format, ``meta.partial``
true) after every question, so a run that is interrupted or killed keeps every answer it got: ``eval --resume``
reads them back (:func:`resumable`) and asks only the rest. ``report.json`` is written when the run ends.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from rags_expert.evaluation.scoring import VERDICTS, Result, right_cited

FORMAT = "rags-expert-eval/1"
REPORT = "report.json"
PARTIAL = "report.partial.json"
"""The report of a run that has not ended (yet): rewritten after every question, removed when it ends."""


class ReportError(ValueError):
    """A report that cannot be read or written: its message is one line naming the file and what is wrong."""


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank; 0 for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def _rate(part: int, whole: int) -> float | None:
    """``part / whole``, None when there is no whole."""
    return round(part / whole, 4) if whole else None


def metrics(results: list[Result]) -> dict[str, Any]:
    """Counts and rates of ``results``: right+cited and right of the answerable, wrong of all, honest of the
    unanswerable, cited-expected of those naming sources; seconds, model calls and tokens per question."""
    answerable = [r for r in results if r.kind == "answerable"]
    unanswerable = [r for r in results if r.kind == "unanswerable"]
    named = [r for r in results if r.cited_expected is not None]
    counts = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    seconds = [r.seconds for r in results]
    n_right_cited = sum(right_cited(r) for r in answerable)
    return {
        "questions": len(results),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "right_cited": n_right_cited,
        **counts,
        "cited_expected": sum(bool(r.cited_expected) for r in named),
        "right_cited_rate": _rate(n_right_cited, len(answerable)),
        "right_rate": _rate(counts["right"], len(answerable)),
        "wrong_rate": _rate(counts["wrong"], len(results)),
        "partial_rate": _rate(counts["partial"], len(answerable)),
        "honest_rate": _rate(counts["honest"], len(unanswerable)),
        "cited_expected_rate": _rate(sum(bool(r.cited_expected) for r in named), len(named)),
        "seconds_median": round(statistics.median(seconds), 3) if seconds else 0.0,
        "seconds_p95": round(percentile(seconds, 0.95), 3),
        "llm_calls_mean": round(statistics.fmean(r.llm_calls for r in results), 2) if results else 0.0,
        "tokens_mean": round(statistics.fmean(r.tokens for r in results), 1) if results else 0.0,
    }


def groups(results: list[Result]) -> dict[str, list[Result]]:
    """``all``, then ``kind: K`` per kind present, then ``tag: T`` per tag (in first-seen order)."""
    out: dict[str, list[Result]] = {"all": results}
    for kind in ("answerable", "unanswerable"):
        if any(r.kind == kind for r in results):
            out[f"kind: {kind}"] = [r for r in results if r.kind == kind]
    for tag in dict.fromkeys(t for r in results for t in r.tags):
        out[f"tag: {tag}"] = [r for r in results if tag in r.tags]
    return out


def build_report(results: list[Result], meta: dict[str, Any]) -> dict[str, Any]:
    """The whole report (what ``report.json`` holds)."""
    return {
        "format": FORMAT,
        "meta": meta,
        "summary": metrics(results),
        "groups": {name: metrics(rows) for name, rows in groups(results).items()},
        "results": [asdict(r) for r in results],
    }


def _fraction(part: int, whole: int) -> str:
    """``3/4``, or a dash when there is nothing to count."""
    return f"{part}/{whole}" if whole else "–"


COLUMNS = (
    "group",
    "n",
    "right+cited",
    "right",
    "wrong",
    "partial",
    "not found",
    "honest",
    "unjudged",
    "errors",
    "cited expected",
    "s median",
    "s p95",
    "calls/q",
    "tokens/q",
)


def table_row(name: str, m: dict[str, Any]) -> list[str]:
    """One row of the table from a group's metrics."""
    named = m["cited_expected_rate"]
    return [
        name,
        str(m["questions"]),
        _fraction(m["right_cited"], m["answerable"]),
        _fraction(m["right"], m["answerable"]),
        _fraction(m["wrong"], m["questions"]),
        str(m["partial"]),
        str(m["not_found"]),
        _fraction(m["honest"], m["unanswerable"]),
        str(m["unjudged"]),
        str(m["error"]),
        f"{named:.0%}" if named is not None else "–",
        f"{m['seconds_median']:.1f}",
        f"{m['seconds_p95']:.1f}",
        f"{m['llm_calls_mean']:.1f}",
        f"{m['tokens_mean']:.0f}",
    ]


def table(report: dict[str, Any]) -> str:
    """The terminal table: a row per group (all, each kind, each tag), aligned columns."""
    rows = [list(COLUMNS), *(table_row(name, m) for name, m in report["groups"].items())]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def write_json(report: dict[str, Any], out_dir: Path, name: str = REPORT) -> Path:
    """``<out>/report.json`` (or ``name``), replaced whole: a reader never sees half of it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=out_dir, prefix=f".{name}.", delete=False) as tmp:
        tmp.write(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp.name, path)
    return path


def check_out(out_dir: Path) -> None:
    """Make sure a run can write its reports in ``out_dir`` (created if missing), before any question is asked
    (raises :class:`ReportError`: ``--out DIR: what is wrong: what to do``)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"--out {out_dir}: is a file, not a folder: name a folder for {REPORT} and report.png")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in (REPORT, PARTIAL, "report.png"):
            if (out_dir / name).is_dir():
                raise ReportError(f"--out {out_dir}: {name} in it is a folder: remove it, or name another folder")
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as exc:
        raise ReportError(
            f"--out {out_dir}: cannot write there ({exc.strerror or type(exc).__name__}): name a folder you can write"
        ) from None


class RunReport:
    """The report of a run in progress, in ``<out>/report.partial.json``: rewritten after every question.

    ``meta()`` gives the report's ``meta`` (called at every write: the judge's counts change); ``results``
    starts with those of an earlier, interrupted run being resumed.
    """

    def __init__(self, out_dir: Path, meta: Callable[[], dict[str, Any]], total: int, results: list[Result]) -> None:
        self.out_dir, self.meta, self.total = out_dir, meta, total
        self.results = list(results)

    @property
    def partial_path(self) -> Path:
        """Where the partial report is."""
        return self.out_dir / PARTIAL

    def add(self, result: Result) -> None:
        """One more question answered: the partial report is written again, with it."""
        self.results.append(result)
        self.write_partial()

    def write_partial(self) -> Path:
        """``report.partial.json``: the results so far, ``meta.partial`` true and how many of how many were asked."""
        meta = {**self.meta(), "partial": True, "answered": len(self.results), "questions_total": self.total}
        return write_json(build_report(self.results, meta), self.out_dir, PARTIAL)

    def finish(self, order: list[str]) -> dict[str, Any]:
        """The whole report, its results in the order of the ids ``order``: ``report.json`` is written and the
        partial report removed."""
        rank = {ident: i for i, ident in enumerate(order)}
        self.results.sort(key=lambda r: rank.get(r.id, len(rank)))
        report = build_report(self.results, self.meta())
        write_json(report, self.out_dir)
        self.partial_path.unlink(missing_ok=True)
        return report


VERDICT_COLOURS = {
    "right": "#55a868",
    "wrong": "#c44e52",
    "partial": "#dd8452",
    "not_found": "#8c8c8c",
    "honest": "#4c72b0",
    "unjudged": "#ccb974",
    "error": "#000000",
}


def write_plot(report: dict[str, Any], out_dir: Path) -> Path | None:
    """``<out>/report.png``: the verdicts per kind (stacked bars) and the latency distribution; None without
    matplotlib (the ``bench`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    results = report["results"]
    kinds = [k for k in ("answerable", "unanswerable") if any(r["kind"] == k for r in results)]
    fig, (bars, hist) = plt.subplots(1, 2, figsize=(11, 4))
    bottom = [0] * len(kinds)
    for verdict in VERDICTS:
        heights = [sum(r["kind"] == k and r["verdict"] == verdict for r in results) for k in kinds]
        if any(heights):
            bars.bar(kinds, heights, bottom=bottom, label=verdict, color=VERDICT_COLOURS[verdict])
            bottom = [b + h for b, h in zip(bottom, heights)]
    bars.set_ylabel("questions")
    bars.set_title(f"verdicts ({len(results)} questions, {report['meta'].get('model', '')})")
    bars.legend(fontsize="small")
    hist.hist([r["seconds"] for r in results], bins=min(20, max(1, len(results))), color="#4c72b0", edgecolor="white")
    hist.yaxis.get_major_locator().set_params(integer=True)
    hist.set_xlabel("seconds per question")
    hist.set_ylabel("questions")
    hist.set_title("latency")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def load_report(path: Path) -> dict[str, Any]:
    """A ``report.json`` written by an earlier run, checked for what a comparison reads (raises
    :class:`ReportError` naming the file and what is wrong)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path}: not a report.json ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("results"), list):
        raise ReportError(f"{path}: not a report.json of rags-expert eval (format {FORMAT})")
    if not isinstance(data.get("summary"), dict):
        raise ReportError(f"{path}: a report.json of rags-expert eval without its 'summary'")
    for i, row in enumerate(data["results"], start=1):
        if not isinstance(row, dict):
            raise ReportError(f"{path}: result {i} is not an object")
        for key in ("id", "verdict"):
            if not isinstance(row.get(key), str):
                raise ReportError(f"{path}: result {i} has no {key!r}")
    if not isinstance(data.get("meta", {}), dict):
        raise ReportError(f"{path}: its 'meta' is not an object")
    return data


def results_of(rows: Iterable[dict[str, Any]]) -> list[Result]:
    """Results read back from a report's ``results`` (raises :class:`ReportError` for a row that is no result)."""
    known = {f.name for f in fields(Result)}
    out = []
    for i, row in enumerate(rows, start=1):
        try:
            out.append(Result(**{k: v for k, v in row.items() if k in known}))
        except TypeError as exc:
            raise ReportError(f"result {i} is not a result of rags-expert eval ({exc})") from None
    return out


def resumable(out_dir: Path) -> tuple[dict[str, Any], list[Result]] | None:
    """The ``meta`` and results of the partial report in ``out_dir`` (None when there is none, or it holds no
    answer yet); :class:`ReportError` naming it when it cannot be read."""
    path = out_dir / PARTIAL
    if not path.is_file():
        return None
    report = load_report(path)
    try:
        results = results_of(report["results"])
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None
    return (report["meta"], results) if results else None
