"""The answer selector's model: its features, its probability, and weights that one command reproduces."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from rags_expert.evidence.reader import FEATURES, ReaderModel, feature_vectors

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "reader" / "features_dev.jsonl"


def _unit(**values):
    return {"kind": "prose", "gold": False} | values


def test_gaps_are_relative_to_the_questions_best_candidate():
    rows = [_unit(e5_unit=0.8, ql=-20.0, ql_tokens=10, pmi=0.5), _unit(e5_unit=0.7, ql=-30.0, ql_tokens=10, pmi=0.1)]
    first, second = feature_vectors(rows)
    assert first["e5_unit_gap"] == 0.0 and second["e5_unit_gap"] == pytest.approx(-0.1)
    assert first["ql"] == -2.0 and second["ql_gap"] == pytest.approx(-1.0)
    assert second["pmi_gap"] == pytest.approx(-0.4)
    assert set(first) == set(FEATURES)


def test_the_model_ranks_by_probability_and_keeps_candidate_order_on_ties():
    model = ReaderModel(("coverage",), (0.5,), (0.25,), (2.0,), -1.0, 0.5, {})
    ranked = model.rank([_unit(coverage=0.25), _unit(coverage=1.0), _unit(coverage=1.0)])
    assert [i for i, _ in ranked] == [1, 2, 0]
    assert ranked[0][1] == pytest.approx(1 / (1 + pow(2.718281828459045, -3.0)))


@pytest.mark.skipif(not DATA.exists(), reason="no committed training data")
def test_retraining_reproduces_the_shipped_weights(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("train_reader", ROOT / "bench" / "train_reader.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    out = tmp_path / "weights.json"
    monkeypatch.setattr(sys, "argv", ["train_reader.py", "--out", str(out)])
    assert train.main() == 0
    shipped = ReaderModel.shipped()
    fresh = json.loads(out.read_text())
    assert fresh["features"] == list(shipped.features)
    assert fresh["weights"] == pytest.approx(list(shipped.weights), abs=1e-5)
    assert fresh["threshold"] == pytest.approx(shipped.threshold, abs=1e-5)
    assert fresh["meta"]["sha256"] == shipped.meta["sha256"]  # the committed data is what they were fitted on
