"""Two runs of one question set compared (``rags-expert eval QUESTIONS --compare OLD.json``).

Questions are matched on their ``id``. Each whose verdict changed is listed, the worst news first:

1. **regression**: it was right (answerable) or honest (unanswerable), now it is not;
2. **newly wrong**: it is now wrong (an answer given as a success that is not right), it was not;
3. **newly right**: it is now right or honest, it was not;
4. **changed**: any other change of verdict (``not_found`` -> ``partial``, ...);

then the questions only one run has, and the delta of every metric of the summary.
"""

from __future__ import annotations

from typing import Any

GOOD = ("right", "honest")
ORDER = ("regression", "newly wrong", "newly right", "changed")


def change(old: str, new: str) -> str | None:
    """The kind of change from verdict ``old`` to ``new`` (None when unchanged)."""
    if old == new:
        return None
    if old in GOOD:
        return "regression"
    if new == "wrong":
        return "newly wrong"
    if new in GOOD:
        return "newly right"
    return "changed"


def question_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per question whose verdict changed, regressions first, then the questions only one run has."""
    before = {str(r["id"]): r for r in old["results"]}
    after = {str(r["id"]): r for r in new["results"]}
    found: dict[str, list[str]] = {kind: [] for kind in ORDER}
    for ident, r in after.items():
        if ident in before and (kind := change(before[ident]["verdict"], r["verdict"])):
            found[kind].append(f"{kind}: {ident}: {before[ident]['verdict']} -> {r['verdict']}")
    lines = [line for kind in ORDER for line in found[kind]]
    lines += [f"new question: {i}: {after[i]['verdict']}" for i in after if i not in before]
    lines += [f"no longer asked: {i}" for i in before if i not in after]
    return lines


def metric_deltas(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``metric: old -> new (+delta)`` for every number of the two summaries."""
    lines = []
    for key, value in new["summary"].items():
        was = old["summary"].get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not isinstance(was, (int, float)):
            if was != value:
                lines.append(f"{key}: {_show(was)} -> {_show(value)}")
            continue
        delta = value - was
        lines.append(f"{key}: {_show(was)} -> {_show(value)} ({'+' if delta >= 0 else ''}{_show(delta)})")
    return lines


def _show(value: Any) -> str:
    """A number with at most 3 decimals, or ``–`` for none."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    return str(value)


def comparison(old: dict[str, Any], new: dict[str, Any], name: str = "the old report") -> str:
    """The text ``--compare`` prints (``name``: the old report's file)."""
    changes = question_changes(old, new)
    started = old.get("meta", {}).get("started")
    head = f"compared with {name}" + (f" (run at {started}):" if started else ":")
    body = changes or ["no question changed its verdict"]
    return "\n".join([head, *body, "", "metrics (old -> new):", *metric_deltas(old, new)])


def regressions(old: dict[str, Any], new: dict[str, Any]) -> int:
    """How many questions regressed."""
    return sum(line.startswith("regression:") for line in question_changes(old, new))
