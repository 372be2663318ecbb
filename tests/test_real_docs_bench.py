"""The shape of the real-documentation benchmark's set (bench/real_docs/): ids, splits, patterns, manifest.

Offline: the documents themselves are checked by ``python bench/real_docs.py --check`` (it downloads the PyPI
ones); the vendored ones (``bench/real_docs/files/``) are checked here against their recorded sha256.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "bench" / "real_docs"
ROWS = [json.loads(line) for line in (SET / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
CORPORA = json.loads((SET / "corpora.json").read_text(encoding="utf-8"))
FIELDS = {"id", "corpus", "split", "kind", "question", "answer", "patterns", "file"}


def test_every_row_has_the_fields_and_a_unique_id() -> None:
    assert all(set(r) == FIELDS for r in ROWS)
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    assert len({r["question"] for r in ROWS}) == len(ROWS)


def test_splits_are_balanced_per_corpus_and_kind() -> None:
    counts = Counter((r["corpus"], r["kind"], r["split"]) for r in ROWS)
    for corpus, meta in CORPORA.items():
        assert meta.get("splits", ["dev", "test"]) in (["dev", "test"], ["dev"], ["test"]), corpus
        for kind in ("literal", "paraphrased", "unanswerable"):
            dev, test = counts[(corpus, kind, "dev")], counts[(corpus, kind, "test")]
            if meta.get("splits") == ["dev"]:  # a dev-only corpus: more tuning data, never reported
                assert dev >= 1 and test == 0, (corpus, kind, dev, test)
            elif meta.get("splits") == ["test"]:  # a test-only corpus: unseen data, never tuned on
                assert dev == 0 and test >= 1, (corpus, kind, dev, test)
            else:
                assert dev >= 1 and test >= 1 and abs(dev - test) <= 1, (corpus, kind, dev, test)
    assert {r["corpus"] for r in ROWS} == set(CORPORA)
    assert {r["split"] for r in ROWS} == {"dev", "test"}


def test_answerable_questions_have_compiling_patterns_and_a_kept_file() -> None:
    for r in ROWS:
        if r["kind"] == "unanswerable":
            assert r["patterns"] == [] and r["file"] == "" and r["answer"] == "", r["id"]
            continue
        assert r["patterns"] and r["answer"], r["id"]
        for p in r["patterns"]:
            re.compile(p, re.IGNORECASE)
        assert r["file"] in CORPORA[r["corpus"]]["files"], r["id"]
        assert any(re.search(p, r["answer"], re.IGNORECASE) for p in r["patterns"]), r["id"]
        assert not any(re.search(p, r["question"], re.IGNORECASE) for p in r["patterns"]), r["id"]


def test_the_manifest_pins_every_corpus() -> None:
    for meta in CORPORA.values():
        if meta.get("vendored"):
            continue
        assert re.fullmatch(r"[0-9a-f]{64}", meta["sha256"])
        assert meta["sdist"] == f"{meta['package']}-{meta['version']}.tar.gz"
        assert meta["repo"].startswith("https://github.com/") and meta["tag"] and meta["license"]
        assert meta["files"] and all(
            f.startswith(("docs/", "doc/")) and f.endswith((".md", ".rst", ".ipynb")) for f in meta["files"]
        )


def test_vendored_corpora_are_committed_with_their_licence_and_checksums() -> None:
    vendored = {name: meta for name, meta in CORPORA.items() if meta.get("vendored")}
    assert {"grpc", "cfs_ds", "osal"} <= set(vendored)
    for name, meta in vendored.items():
        folder = SET / "files" / name
        assert meta["repo"].startswith("https://github.com/") and re.fullmatch(r"[0-9a-f]{40}", meta["commit"])
        assert meta["license"] and (folder / "LICENSE").is_file(), name
        assert meta["files"] and sorted(meta["sha256"]) == sorted(meta["files"]), name
        for rel in meta["files"]:
            assert rel.startswith(meta["root"] + "/"), (name, rel)
            digest = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
            assert digest == meta["sha256"][rel], (name, rel)
        on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "LICENSE"}
        assert on_disk == set(meta["files"]), name
    assert sum(p.stat().st_size for p in (SET / "files").rglob("*") if p.is_file()) < 3_000_000


def test_scoring_counts_a_cited_fact_and_an_honest_failure() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import real_docs

    row = next(r for r in ROWS if r["id"] == "black-l01")
    cited = {"n": 1, "source": "/x/docs/usage_and_configuration/the_basics.md", "content": "The default is 88."}
    good = real_docs.score(row, 0, {"answer": "88 characters [1]", "sources": [cited]}, [cited["source"]])
    assert good["right_cited"] and good["recall5"] and not good["wrong_success"]
    uncited = {"answer": "88 characters [1]", "sources": [cited | {"content": "Black is a formatter."}]}
    assert not real_docs.score(row, 0, uncited, [])["right_cited"]
    wrong = real_docs.score(row, 0, {"answer": "79 [1]", "sources": [cited]}, [])
    assert wrong["wrong_success"] and not wrong["right_cited"]
    absent = next(r for r in ROWS if r["kind"] == "unanswerable")
    assert real_docs.score(absent, 1, {"answer": "I could not find an answer.", "sources": []}, [])["honest"]


def test_single_fact_scores_through_the_shared_scoring() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import single_fact

    row = {"id": "a01", "question": "When was it built?", "answers": ["1,871"], "source": "zephyr-lighthouse.md"}
    cited = {"n": 1, "source": "/d/zephyr-lighthouse.md", "content": "Built in 1871."}
    good = single_fact.score(
        row, 0, json.dumps({"answer": "In 1871 [1].", "answer_kind": "extractive", "sources": [cited]})
    )
    assert good["right_cited"] and good["right"] and good["kind"] == "extractive"
    other_file = single_fact.score(
        row, 0, json.dumps({"answer": "In 1871 [1].", "sources": [cited | {"source": "/d/x.md"}]})
    )
    assert other_file["right"] and not other_file["right_cited"]
    assert not single_fact.score(row, 0, json.dumps({"answer": "In 1872.", "sources": []}))["right"]
    assert single_fact.score(row, 0, "Traceback ...")["error"]


def test_a_dev_run_never_selects_a_test_only_corpus() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import real_docs

    test_only = {name for name, meta in CORPORA.items() if meta.get("splits") == ["test"]}
    assert len(test_only) >= 2
    dev = real_docs.select(ROWS, "dev", list(CORPORA), 0)
    assert dev and not {r["corpus"] for r in dev} & test_only
    assert not real_docs.select(ROWS, "dev", sorted(test_only), 2)
    assert {r["corpus"] for r in real_docs.select(ROWS, "test", list(CORPORA), 0)} >= test_only
