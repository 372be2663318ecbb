"""Fit the answer selector's logistic regression on dev features and write its weights into the package.

Input: the candidates' features that ``bench/reader_signals.py --out`` records for dev questions (committed, numbers
only, as ``bench/reader/features_dev.jsonl``). Each unit is one example, labelled 1 when an answer pattern of its
question matches it. The fit is deterministic (standardised features, L2-regularised Newton steps, a fixed number of
them), so the same file gives the same weights: ``tests/evidence/test_reader.py`` checks that the shipped JSON is
what this command writes.

The abstain threshold: the highest-probability candidate is quoted when its probability reaches the threshold,
else the run says "not found". It is the lowest threshold at which, on the training questions, wrong quotes stay
within ``--max-wrong`` of the answerable ones and at least ``--min-honest`` of the unanswerable ones abstain.

Leave-one-corpus-out numbers are printed (each corpus scored by a model fitted on the others, its threshold chosen
there too), against today's evidence order on the same candidates.

    python bench/train_reader.py                                  # bench/reader/features_dev.jsonl → the package
    python bench/train_reader.py --in /tmp/reader_features.jsonl --no-llm --dry-run
    python bench/train_reader.py --without --in FILES_WITH_PMI --dry-run     # every feature, the PMI too
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rags_expert.evidence.reader import FEATURES, LIKELIHOOD_FEATURES, feature_vectors  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

DATA = ROOT / "bench" / "reader" / "features_dev.jsonl"
WEIGHTS = ROOT / "rags_expert" / "evidence" / "reader_weights.json"
DEFAULT_WITHOUT = ("pmi", "pmi_gap")
"""The answer PMI ranked the gold unit worst of all signals and costs a request per unit: not measured on every
corpus, left out by default."""
L2 = 1.0
STEPS = 25


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """The questions of the feature files, in file order."""
    return [json.loads(line) for p in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def matrix(questions: list[dict[str, Any]], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, question index per row) over every candidate of ``questions``."""
    xs, ys, qs = [], [], []
    for qi, q in enumerate(questions):
        for named, unit in zip(feature_vectors(q["units"]), q["units"], strict=True):
            xs.append([named[n] for n in names])
            ys.append(float(bool(unit["gold"])))
            qs.append(qi)
    return np.array(xs, dtype=float).reshape(-1, len(names)), np.array(ys), np.array(qs, dtype=int)


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, weights, bias) of an L2-regularised logistic regression (Newton's method, fixed steps)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], L2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        grad = z.T @ (p - y) + reg * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(reg) + 1e-9 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return mean, scale, w[:-1], float(w[-1])


def probabilities(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    """P(gold) per row."""
    return 1.0 / (1.0 + np.exp(-np.clip(((x - mean) / scale) @ w + b, -30, 30)))


def outcomes(questions: list[dict[str, Any]], probs: np.ndarray, qidx: np.ndarray) -> list[tuple[str, bool, float]]:
    """Per question: (kind, whether the most probable candidate is gold, its probability)."""
    out = []
    for qi, q in enumerate(questions):
        rows = np.flatnonzero(qidx == qi)
        if len(rows) == 0:
            out.append((q["kind"], False, 0.0))
            continue
        best = rows[int(np.argmax(probs[rows]))]  # first of equals: candidate order
        out.append((q["kind"], bool(q["units"][best - rows[0]]["gold"]), float(probs[best])))
    return out


def rates(res: list[tuple[str, bool, float]], threshold: float) -> dict[str, float]:
    """right+quoted literal / paraphrased, wrong (of answerable), honest (of unanswerable) at ``threshold``."""

    def share(kind: str, ok: Any) -> float:
        rows = [r for r in res if r[0] == kind]
        return sum(ok(r) for r in rows) / len(rows) if rows else 0.0

    answerable = [r for r in res if r[0] != "unanswerable"]
    return {
        "literal": share("literal", lambda r: r[1] and r[2] >= threshold),
        "paraphrased": share("paraphrased", lambda r: r[1] and r[2] >= threshold),
        "wrong": sum((not r[1]) and r[2] >= threshold for r in answerable) / max(1, len(answerable)),
        "honest": share("unanswerable", lambda r: r[2] < threshold),
    }


def choose_threshold(res: list[tuple[str, bool, float]], max_wrong: float, min_honest: float) -> float:
    """The lowest candidate probability at which wrong ≤ ``max_wrong`` and honest ≥ ``min_honest``."""
    for t in sorted({round(r[2], 6) for r in res} | {1.0}):
        got = rates(res, t)
        if got["wrong"] <= max_wrong and got["honest"] >= min_honest:
            return float(t)
    return 1.0


def evidence_outcomes(questions: list[dict[str, Any]]) -> list[tuple[str, bool, float]]:
    """Today's extractive choice on the same candidates (``EvidenceScorer.best_answer``): the best-ranked unit the
    evidence says answers, when it scores ``evidence.min_answer_score``; else none. (The CLI also has the model's
    draft and the relevance gate before it: this is the quote alone.)"""
    from rags_expert.settings import EvidenceSettings

    floor = EvidenceSettings().min_answer_score
    out = []
    for q in questions:
        answering = sorted((u for u in q["units"] if u.get("answers")), key=lambda u: u["evidence_rank"])
        top = answering[0] if answering and answering[0]["evidence"] >= floor else None
        out.append((q["kind"], bool(top and top["gold"]), 1.0 if top else 0.0))
    return out


def table(label: str, got: dict[str, float], top1: float) -> str:
    """One Markdown row."""
    return (
        f"| {label} | {top1:.0%} | {got['literal']:.0%} | {got['paraphrased']:.0%} | {got['wrong']:.0%} "
        f"| {got['honest']:.0%} |"
    )


def main() -> int:
    """Fit, evaluate leave-one-corpus-out, write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in", dest="inp", type=Path, nargs="+", default=[DATA])
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--no-llm", action="store_true", help="leave out the local model's features (QL, PMI)")
    parser.add_argument(
        "--without",
        nargs="*",
        default=list(DEFAULT_WITHOUT),
        choices=FEATURES,
        help=f"features left out (default: {' '.join(DEFAULT_WITHOUT)}; none: --without)",
    )
    parser.add_argument("--max-wrong", type=float, default=0.05)
    parser.add_argument("--min-honest", type=float, default=0.9)
    parser.add_argument("--dry-run", action="store_true", help="print, write nothing")
    bench_results.add_option(parser)
    args = parser.parse_args()
    questions = load(args.inp)
    left_out = set(args.without) | (set(LIKELIHOOD_FEATURES) if args.no_llm else set())
    names = tuple(f for f in FEATURES if f not in left_out)
    corpora = sorted({q["corpus"] for q in questions})
    head = (
        "| selector (leave one corpus out) | top-1 gold (answerable with a gold candidate) | right literal "
        "| right paraphrased | wrong | honest |\n|---|---|---|---|---|---|"
    )
    print(head)
    held: list[tuple[str, bool, float]] = []
    held_t: list[tuple[str, bool, float]] = []
    for corpus in corpora:
        train = [q for q in questions if q["corpus"] != corpus]
        test = [q for q in questions if q["corpus"] == corpus]
        x, y, qi = matrix(train, names)
        mean, scale, w, b = fit(x, y)
        t = choose_threshold(outcomes(train, probabilities(x, mean, scale, w, b), qi), args.max_wrong, args.min_honest)
        xt, _, qt = matrix(test, names)
        res = outcomes(test, probabilities(xt, mean, scale, w, b), qt)
        held += res
        held_t += [(k, ok, 1.0 if p >= t else 0.0) for k, ok, p in res]
    with_gold = [q for q in questions if any(u["gold"] for u in q["units"])]
    gold_ids = {q["id"] for q in with_gold}

    def top1(res: list[tuple[str, bool, float]]) -> float:
        kept = [r for r, q in zip(res, questions, strict=True) if q["id"] in gold_ids]
        return sum(r[1] for r in kept) / max(1, len(kept))

    today = evidence_outcomes(questions)
    rows = [
        table("today: the evidence's quote (best_answer)", rates(today, 0.5), top1(today)),
        table(
            f"reader{' without ' + ', '.join(sorted(left_out)) if left_out else ''}, each fold's threshold",
            rates(held_t, 0.5),
            top1(held),
        ),
    ]
    print("\n".join(rows))
    x, y, qi = matrix(questions, names)
    mean, scale, w, b = fit(x, y)
    res = outcomes(questions, probabilities(x, mean, scale, w, b), qi)
    threshold = choose_threshold(res, args.max_wrong, args.min_honest)
    rows.append(table(f"reader fitted on all (threshold {threshold:.3f}, in-sample)", rates(res, threshold), top1(res)))
    print(rows[-1])
    title = "The reader (logistic regression over the signals) against today's quote"
    bench_results.record(args.record, "reader_selector", title, "\n".join([head, *rows]))
    print("\nweights (standardised features):")
    for n, v in sorted(zip(names, w, strict=True), key=lambda t: -abs(t[1])):
        print(f"  {n:14s} {v:+.3f}")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in args.inp)).hexdigest()
    model = {
        "features": list(names),
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "weights": [round(float(v), 6) for v in w],
        "bias": round(b, 6),
        "threshold": round(threshold, 6),
        "meta": {
            "trained_on": [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name for p in args.inp],
            "sha256": digest,
            "questions": len(questions),
            "units": len(y),
            "gold_units": int(y.sum()),
            "l2": L2,
            "steps": STEPS,
            "max_wrong": args.max_wrong,
            "min_honest": args.min_honest,
        },
    }
    if not args.dry_run:
        args.out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
