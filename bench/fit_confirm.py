"""Fit the confirmation's calibration and threshold (``evidence.confirm``, ``evidence.min_confirm``) on dev questions.

Issue 52. The ``compact`` profile asks the model whether the excerpts state the answer the run would give
(:mod:`rags_expert.rag.verdict.confirmed`); its yes-probability becomes the probability that the answer is right
through a logistic calibration per answer kind (``generated``: the model's sentence; ``extractive``: the answer
selector's quote), fitted here on a dev run made with the threshold at 0 (every answer given, each with its
``confirmation``), and shipped as ``rags_expert/rag/verdict/confirm_weights.json``. The threshold is chosen on the
same run as ``evidence.min_cited_support`` is (``local_designs.fit``): the lowest that keeps wrong answers within 5 %
of the answerable and honest answers on 90 % of the unanswerable, else the most right − wrong there.

    python bench/local_designs.py --split dev --designs compact --in-process \\
        --env RAGS_EXPERT_EVIDENCE__MIN_CONFIRM=0 --out dev_confirm.json
    python bench/fit_confirm.py dev_confirm.json [more runs ...] [--write] [--record] [--cross]

Several runs (other corpora of the same split and model) are fitted as one. ``--write`` writes the weights file with
the threshold (what ``evidence.min_confirm`` unset reads). ``--cross`` also prints leave-one-corpus-out: the
calibration and threshold fitted on every other corpus, applied to the one left out, summed over corpora, for the
per-kind calibration and for the pooled one (one set of weights for every kind), beside giving every answer.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import results as bench_results  # noqa: E402
from local_designs import fit  # noqa: E402

from rags_expert.rag.verdict.confirmed import WEIGHTS_FILE, Calibration, logit  # noqa: E402

WEIGHTS = ROOT / "rags_expert" / "rag" / "verdict" / WEIGHTS_FILE
KINDS = ("generated", "extractive")
MIN_ROWS = 20
"""A kind with fewer answers (or with only right or only wrong ones) reads the pooled weights: two weights from a
handful of answers, nearly all right, map any yes-probability to a high confidence (8 selector quotes, 7 right, did
on the first fit)."""
L2 = 0.1
"""Ridge penalty on the slope (a few dozen answers a kind)."""


def logistic(xs: list[float], ys: list[int], iterations: int = 50) -> tuple[float, float]:
    """``(bias, slope)`` of a one-feature logistic regression by Newton's method, the slope lightly penalised."""
    b = w = 0.0
    for _ in range(iterations):
        gb = gw = hbb = hbw = hww = 0.0
        for x, y in zip(xs, ys, strict=True):
            p = 1 / (1 + math.exp(-(b + w * x)))
            gb, gw = gb + p - y, gw + (p - y) * x
            v = p * (1 - p)
            hbb, hbw, hww = hbb + v, hbw + v * x, hww + v * x * x
        gw, hww = gw + L2 * w, hww + L2
        det = hbb * hww - hbw * hbw
        if abs(det) < 1e-12:
            break
        db, dw = (hww * gb - hbw * gw) / det, (hbb * gw - hbw * gb) / det
        b, w = b - db, w - dw
        if abs(db) + abs(dw) < 1e-9:
            break
    return b, w


def answered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers the model was asked to confirm, each labelled right (right and cited) or not."""
    return [r for r in rows if r.get("yes") is not None and r.get("code") == 0]


def calibrate(rows: list[dict[str, Any]], min_rows: int = MIN_ROWS) -> Calibration:
    """Logistic weights per answer kind over the logit of the yes-probability; pooled where a kind has fewer than
    ``min_rows`` answers."""

    def weights(subset: list[dict[str, Any]]) -> dict[str, float]:
        b, w = logistic([logit(r["yes"]) for r in subset], [int(bool(r.get("right_cited"))) for r in subset])
        return {"bias": round(b, 4), "yes_logit": round(w, 4), "answers": len(subset)}

    pooled = weights(rows)
    out = {}
    for kind in KINDS:
        subset = [r for r in rows if (r.get("answer_kind") or "generated") == kind]
        labels = {bool(r.get("right_cited")) for r in subset}
        out[kind] = weights(subset) if len(subset) >= min_rows and len(labels) == 2 else pooled | {"pooled": 1}
    return Calibration(out)


def wide(curve: list[tuple[float, int, int, int]], chosen: float, answerable: int, questions: int) -> str:
    """The curve at every tenth and the chosen threshold, one column each (a short table for the results page)."""
    points = [c for c in curve if round(c[0] * 10) == c[0] * 10 or c[0] == chosen]
    head = "| min_confirm | " + " | ".join(f"{t:.2f}" + (" (chosen)" if t == chosen else "") for t, *_ in points) + " |"
    rows = [
        ("right+cited", 1, answerable),
        ("wrong success", 2, answerable),
        ("honest", 3, questions - answerable),
    ]
    lines = [head, "|---" * (len(points) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(f"{c[i]}/{n}" for c in points) + " |" for name, i, n in rows]
    return "\n".join(lines)


def scored(rows: list[dict[str, Any]], calibration: Calibration) -> list[dict[str, Any]]:
    """``rows`` with each confirmed answer's ``confidence`` by ``calibration``."""
    for r in rows:
        if r.get("yes") is not None:
            r["confidence"] = calibration.probability(r.get("answer_kind") or "generated", r["yes"])
    return rows


def cross(rows: list[dict[str, Any]]) -> str:
    """Leave-one-corpus-out sums: right+cited, wrong success and unanswerable answered, for every answer given, the
    per-kind calibration and the pooled one (each with the threshold its training corpora choose)."""
    corpora = sorted({r["corpus"] for r in rows})
    lines = ["| calibration | right+cited | wrong success | unanswerable answered |", "|---|---|---|---|"]
    answerable = sum(r["kind"] != "unanswerable" for r in rows)
    unanswerable = len(rows) - answerable
    given = [r for r in rows if r["code"] == 0]
    lines.append(
        f"| none (every answer given) | {sum(bool(r.get('right_cited')) for r in given)}/{answerable} | "
        f"{sum(bool(r.get('wrong_success')) for r in given)}/{answerable} | "
        f"{sum(r['kind'] == 'unanswerable' for r in given)}/{unanswerable} |"
    )
    for name, min_rows in (("per kind", MIN_ROWS), ("pooled", 10**9)):
        right = wrong = una = 0
        for held in corpora:
            train = [dict(r) for r in rows if r["corpus"] != held]
            calibration = calibrate(answered(train), min_rows)
            _, threshold, _ = fit(scored(train, calibration), "compact", key="confidence")
            for r in scored([dict(r) for r in rows if r["corpus"] == held], calibration):
                if r["code"] == 0 and (r.get("yes") is None or r["confidence"] >= threshold):
                    right += bool(r.get("right_cited"))
                    wrong += bool(r.get("wrong_success"))
                    una += r["kind"] == "unanswerable"
        lines.append(f"| {name} | {right}/{answerable} | {wrong}/{answerable} | {una}/{unanswerable} |")
    return "\n".join(lines)


def main() -> int:
    """Fit, print the curve and the threshold, optionally write the weights and record the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", type=Path, nargs="+", help="compact runs saved by local_designs.py --out, made with min_confirm 0"
    )
    parser.add_argument("--cross", action="store_true", help="also print leave-one-corpus-out sums")
    parser.add_argument("--write", action="store_true", help=f"write {WEIGHTS.relative_to(ROOT)}")
    bench_results.add_option(parser)
    args = parser.parse_args()
    runs = [json.loads(path.read_text()) for path in args.runs]
    rows = [r for saved in runs for r in saved["results"] if r["design"] == "compact"]
    calibration = calibrate(answered(rows))
    text, chosen, curve = fit(scored(rows, calibration), "compact", key="confidence")
    meta = dict(runs[0]["meta"])
    meta["corpora"] = ", ".join(saved["meta"]["corpora"] for saved in runs)
    commits = "/".join(dict.fromkeys(saved["meta"]["commit"][:7] for saved in runs))
    fitted_on = f"{meta['model']}, {meta['split']} half, {len(rows)} questions ({meta['corpora']}), at {commits}"
    print(json.dumps(calibration.weights, indent=1))
    print(text)
    if args.cross:
        print("\nleave one corpus out:\n" + cross(rows))
    if args.write:
        payload = {"fitted_on": fitted_on, "weights": calibration.weights, "min_confirm": chosen}
        WEIGHTS.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {WEIGHTS.relative_to(ROOT)} (evidence.min_confirm unset reads its threshold, {chosen:.2f})")
    bench_results.record(
        args.record,
        f"confirm_fit_{meta['split']}",
        f"evidence.min_confirm on {meta['model']}, {meta['split']} half (compact, run at 0)",
        wide(curve, chosen, len([r for r in rows if r["kind"] != "unanswerable"]), len(rows)),
        notes=f"{len(rows)} questions of {len(set(r['corpus'] for r in rows))} corpora; weights in {WEIGHTS.name}. "
        f"Corpora: {meta['corpora']}. The threshold " + text.rsplit("\n", 1)[-1],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
