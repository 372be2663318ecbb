"""Would the answer selector's agreement sharpen the confirmation? Research for issue 52, not shipped.

The ``compact`` profile's confirmation reads one signal, the model's yes-probability that the excerpts state the
answer (:mod:`rags_expert.rag.verdict.confirmed`). This script adds a second one that needs no model call: the
**agreement**, the answer selector's probability mass (:mod:`rags_expert.evidence.reader`, the ``small`` profile's
calibrated reader) on the units of the same chunks that hold what the answer adds to the question (every number and
code name it adds, else all its added terms; for the selector's own quote, every unit: its probability that some
unit answers). For each confirmed answer
of dev runs made with ``evidence.min_confirm`` at 0 (``bench/fit_confirm.py``'s input), it retrieves the question's
chunks from its corpus's knowledge base as the profile does, and prints the AUC (right against wrong answers) of
each signal and of their sum, and the leave-one-corpus-out sums of ``fit_confirm.py --cross`` for the shipped
calibration (the yes-probability per answer kind) beside a two-feature one (its logit and the agreement's).

    python bench/confirm_agreement.py --kb-dir KBS bench/local_designs/dev_confirm.json \\
        bench/local_designs/dev_confirm2.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # reader_signals reads helpers.shared_data

import numpy as np  # noqa: E402
from fit_confirm import MIN_ROWS, answered  # noqa: E402
from local_designs import fit  # noqa: E402
from reader_signals import candidates, reading  # noqa: E402

from rags_expert.evidence import split_sentences, strip_citations, terms  # noqa: E402
from rags_expert.evidence.answer_type import new_numbers  # noqa: E402
from rags_expert.evidence.code import new_code  # noqa: E402
from rags_expert.rag.verdict.cited import added_terms  # noqa: E402

L2 = 0.1


def holds(answer: str, question: str, unit: str) -> bool:
    """Whether ``unit`` holds what one sentence of ``answer`` adds to ``question`` (its numbers and code names, or
    else every added term); the selector's own quote ("The source says: …") by every unit."""
    text, unit_terms = unit.lower(), terms(unit)
    for sentence in split_sentences(answer):
        bare = strip_citations(sentence)
        if bare.startswith(("The source says", "The sources say")):
            return True
        claim = added_terms(sentence, question)
        numbers, code = new_numbers(bare, question), new_code(bare, question)
        if numbers or code:
            written = sum(n in text for n in numbers) + sum(c.strip("[]()`'\"").lower() in text for c in code)
            if written == len(numbers) + len(code):
                return True
        elif claim and claim <= unit_terms:
            return True
    return False


async def agreements(kb_dir: Path, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each confirmed answer's agreement, by question id."""
    from rags_expert.retrieval.qdrant import close_client

    out: dict[str, float] = {}
    for corpus in sorted({r["corpus"] for r in rows}):
        settings, retriever, stage, scorer, frequencies = reading(kb_dir / corpus, {"evidence.profile": "compact"})
        try:
            for r in (r for r in rows if r["corpus"] == corpus):
                units = await candidates(r["question"], settings, retriever, stage, scorer, frequencies)
                probs = scorer.model.probabilities(units) if units else []
                out[r["id"]] = sum(
                    p for p, u in zip(probs, units, strict=True) if holds(r["answer"], r["question"], u["text"])
                )
        finally:
            close_client(settings.store)
    return out


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def features(row: dict[str, Any], agree: dict[str, float], with_agreement: bool) -> list[float]:
    return [1.0, logit(row["yes"])] + ([logit(agree[row["id"]])] if with_agreement else [])


def train(rows: list[dict[str, Any]], agree: dict[str, float], with_agreement: bool) -> np.ndarray:
    """Logistic weights (Newton's method, the slopes lightly penalised)."""
    x = np.array([features(r, agree, with_agreement) for r in rows])
    y = np.array([float(bool(r.get("right_cited"))) for r in rows])
    w = np.zeros(x.shape[1])
    ridge = np.eye(len(w)) * L2
    ridge[0, 0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        w -= np.linalg.solve((x * (p * (1 - p))[:, None]).T @ x + ridge, x.T @ (p - y) + ridge @ w)
    return w


def calibrated(rows, agree, with_agreement, weights) -> list[dict[str, Any]]:
    """``rows`` with each confirmed answer's ``confidence`` (weights per answer kind)."""
    for r in rows:
        if r.get("yes") is not None:
            w = weights[r.get("answer_kind") or "generated"]
            r["confidence"] = float(1 / (1 + math.exp(-np.dot(w, features(r, agree, with_agreement)))))
    return rows


def per_kind(rows, agree, with_agreement) -> dict[str, np.ndarray]:
    given = answered(rows)
    pooled = train(given, agree, with_agreement)
    out = {}
    for kind in ("generated", "extractive"):
        subset = [r for r in given if (r.get("answer_kind") or "generated") == kind]
        two = len({bool(r.get("right_cited")) for r in subset}) == 2
        out[kind] = train(subset, agree, with_agreement) if len(subset) >= MIN_ROWS and two else pooled
    return out


def auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / max(1, len(pos) * len(neg))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="compact runs made with min_confirm 0")
    parser.add_argument("--kb-dir", type=Path, required=True, help="the knowledge bases the runs read, one a corpus")
    args = parser.parse_args()
    rows = [r for p in args.runs for r in json.loads(p.read_text())["results"] if r["design"] == "compact"]
    given = answered(rows)
    agree = asyncio.run(agreements(args.kb_dir, given))
    labels = [bool(r.get("right_cited")) for r in given]
    print(f"{len(given)} confirmed answers, {sum(labels)} right")
    print(
        f"AUC yes {auc([r['yes'] for r in given], labels):.3f}, agreement "
        f"{auc([agree[r['id']] for r in given], labels):.3f}, logit sum "
        f"{auc([logit(r['yes']) + logit(agree[r['id']]) for r in given], labels):.3f}"
    )
    answerable = sum(r["kind"] != "unanswerable" for r in rows)
    unanswerable = len(rows) - answerable
    print("\n| calibration (leave one corpus out) | right+cited | wrong success | unanswerable answered |")
    print("|---|---|---|---|")
    for name, with_agreement in (("yes-probability (shipped)", False), ("yes-probability + agreement", True)):
        right = wrong = una = 0
        for held in sorted({r["corpus"] for r in rows}):
            train_rows = [dict(r) for r in rows if r["corpus"] != held]
            weights = per_kind(train_rows, agree, with_agreement)
            _, threshold, _ = fit(calibrated(train_rows, agree, with_agreement, weights), "compact", key="confidence")
            for r in calibrated([dict(r) for r in rows if r["corpus"] == held], agree, with_agreement, weights):
                if r["code"] == 0 and (r.get("yes") is None or r["confidence"] >= threshold):
                    right += bool(r.get("right_cited"))
                    wrong += bool(r.get("wrong_success"))
                    una += r["kind"] == "unanswerable"
        print(f"| {name} | {right}/{answerable} | {wrong}/{answerable} | {una}/{unanswerable} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
