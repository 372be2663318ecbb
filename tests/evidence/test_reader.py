"""The answer selector's model: its features, its probability, and weights that one command reproduces."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document

from rags_expert.evidence import EvidenceScorer
from rags_expert.evidence.reader.features import FEATURES, feature_vectors
from rags_expert.evidence.reader.model import Logistic, ReaderModel
from rags_expert.evidence.reader.scorer import ReadingScorer
from rags_expert.settings import EvidenceSettings

ROOT = Path(__file__).resolve().parents[2]
DATA = sorted((ROOT / "bench" / "reader").glob("features_*.jsonl"))


def _unit(**values):
    return {"kind": "prose", "gold": False, "missing": 0.0} | values


def test_gaps_and_similarities_are_relative_to_the_questions_other_candidates():
    rows = [_unit(e5_unit=0.8, ql=-20.0, ql_tokens=10, evidence=0.7), _unit(e5_unit=0.7, ql=-30.0, ql_tokens=10)]
    first, second = feature_vectors(rows)
    assert first["e5_unit_z"] == pytest.approx(1.0) and second["e5_unit_z"] == pytest.approx(-1.0)
    assert first["e5_unit_rank"] == 1.0 and second["e5_unit_rank"] == 0.5
    assert first["ql"] == -2.0 and second["ql_gap"] == pytest.approx(-1.0)
    assert second["evidence_gap"] == pytest.approx(-0.7)
    assert set(first) == set(FEATURES)
    # another embedding model's scale (similarities twice as spread, shifted) reads the same
    scaled = feature_vectors([_unit(e5_unit=0.4), _unit(e5_unit=0.2)])
    assert [v["e5_unit_z"] for v in scaled] == pytest.approx([1.0, -1.0])
    # no embeddings: the similarity features are all 0, not a guess
    assert {v["e5_unit_z"] for v in feature_vectors([_unit(), _unit()])} == {0.0}


def _model(threshold=0.5, no_answer=0.0):
    return ReaderModel(Logistic(("coverage",), (0.5,), (0.25,), (2.0,), no_answer), IDENTITY, threshold, {})


IDENTITY = Logistic(("log_odds",), (0.0,), (1.0,), (1.0,), 0.0)
"""A calibrator that keeps the selector's probability."""


def test_candidates_and_no_answer_share_one_probability():
    probs = _model().probabilities([_unit(coverage=0.25), _unit(coverage=1.0)])
    # logits: 2*(0.25-0.5)/0.25 = -2, 2*(1-0.5)/0.25 = 4; "no answer" 0
    total = math.exp(-2) + math.exp(4) + 1.0
    assert probs == pytest.approx([math.exp(-2) / total, math.exp(4) / total])


def test_the_most_probable_candidate_is_chosen_and_ties_keep_candidate_order():
    assert _model(threshold=0.3).choose([_unit(coverage=0.25), _unit(coverage=1.0), _unit(coverage=1.0)])[0] == 1


def test_one_unit_held_by_two_overlapping_chunks_is_one_quote():
    rows = [_unit(coverage=1.0), _unit(coverage=0.25), _unit(coverage=1.0, same_as=0)]
    chosen = _model().choose(rows)
    assert chosen is not None and chosen[0] == 0
    assert chosen[1] == pytest.approx(2 * math.exp(4) / (2 * math.exp(4) + math.exp(-2) + 1.0))


def test_weak_candidates_leave_the_probability_with_no_answer():
    weak = [_unit(coverage=0.5), _unit(coverage=0.5)]  # logits 0 against "no answer" 2: each 1/(2+e^2)
    assert _model(threshold=0.2, no_answer=2.0).choose(weak) is None
    assert _model(threshold=0.2, no_answer=-2.0).choose(weak) is not None
    assert _model().choose([]) is None


def test_the_calibrator_decides_on_the_chosen_quote_with_the_evidences_own_reading():
    trusts_rules = Logistic(("answers",), (0.5,), (0.5,), (3.0,), 0.0)  # P = sigmoid(±3)
    model = ReaderModel(_model().selector, trusts_rules, 0.5, {})
    rows = [_unit(coverage=1.0, answers=True), _unit(coverage=0.25)]
    assert model.choose(rows) == (0, pytest.approx(1 / (1 + math.exp(-3.0))))
    rows[0]["answers"] = False  # the same choice, which the evidence's rules say does not answer
    assert model.read(rows)[0] == 0 and model.choose(rows) is None


def test_a_code_line_is_never_the_answer_even_when_most_probable():
    rows = [_unit(coverage=1.0, kind="code", answers=True), _unit(coverage=0.25)]
    assert _model(threshold=0.3).read(rows)[0] == 0  # the model's choice ...
    assert _model(threshold=0.3).choose(rows) is None  # ... is not quoted: "not found", its closest passages shown


async def test_the_reading_scorer_never_quotes_a_code_example():
    doc = Document(
        "The debugger is protected by a PIN.\n\n```text\n$ app run --debug-pin protected\n```",
        metadata={"title": "Debugging"},
    )
    prefers_code = ReaderModel(Logistic(("kind_code",), (0.0,), (1.0,), (6.0,), 0.0), IDENTITY, 0.3, {})
    scorer = ReadingScorer(EvidenceSettings(use_embeddings=False), model=prefers_code)
    assert await scorer.best_answer("What is the debugger protected by?", [doc]) is None
    closest = await scorer.closest("What is the debugger protected by?", [doc])
    assert [m.sentence for m in closest] == ["The debugger is protected by a PIN."]  # a code line is no passage either


async def test_the_reading_scorer_quotes_what_the_model_chooses_or_nothing():
    docs = [
        Document("The default timeout is 30 seconds. Retries are off.", metadata={"title": "Client"}),
        Document("Logging goes to stderr.", metadata={"title": "Logging"}),
    ]
    settings = EvidenceSettings(use_embeddings=False)
    chooses = ReadingScorer(settings, model=_model(threshold=0.3))
    match = await chooses.best_answer("What is the default timeout?", docs)
    assert match is not None and match.doc == 0 and match.sentence == "The default timeout is 30 seconds."
    assert 0.3 <= match.score <= 1.0
    abstains = ReadingScorer(settings, model=_model(threshold=0.99))
    assert await abstains.best_answer("What is the default timeout?", docs) is None


OPTION = Document(
    "Command line: `-t INT`\n\nDefault: `30`\n\nWorkers silent for more than this many seconds are killed and "
    "restarted.\n\nGenerally set in the 20-60 seconds range.\n\n## `graceful_timeout`\n\nDefault: `45`",
    metadata={"title": "Settings", "section": "Worker Processes > `timeout`"},
)


async def test_a_description_without_the_value_asked_for_is_quoted_with_the_value_line_beside_it():
    scorer = ReadingScorer(EvidenceSettings(use_embeddings=False), model=_model(threshold=0.2))
    question = "By default, after how many seconds are silent workers killed and restarted?"
    match = await scorer.best_answer(question, [OPTION])
    assert match is not None
    assert match.sentence == (
        "`timeout` … Default: `30`. Workers silent for more than this many seconds are killed and restarted."
    )
    # the "Default:" line the question names, not the neighbouring sentence's range; a question asking for no value
    # (which setting?) gets the description alone
    which = await scorer.best_answer("Which setting kills and restarts silent workers?", [OPTION])
    assert which is not None and "Default" not in which.sentence


async def test_a_value_under_the_next_heading_or_in_a_code_line_is_never_added():
    scorer = ReadingScorer(EvidenceSettings(use_embeddings=False), model=_model(threshold=0.2))
    question = "By default, after how many seconds are silent workers killed and restarted?"
    last = Document(
        "Workers silent for more than this many seconds are killed and restarted.\n\n## `graceful_timeout`\n\n"
        "Default: `45`",
        metadata={"title": "Settings", "section": "`timeout`"},
    )
    coded = Document(
        "Workers silent for more than this many seconds are killed and restarted.\n\n```\ntimeout = 30  # default\n```",
        metadata={"title": "Settings", "section": "Timeouts"},
    )
    for doc in (last, coded):
        match = await scorer.best_answer(question, [doc])
        assert match is not None and match.sentence.endswith(
            "Workers silent for more than this many seconds are killed and restarted."
        ), match


def test_the_shipped_model_needs_no_local_model_call():
    assert not ReaderModel.shipped().needs_likelihood
    with pytest.raises(ValueError, match="likelihood"):
        ReadingScorer(
            EvidenceSettings(), model=ReaderModel(Logistic(("ql",), (0.0,), (1.0,), (1.0,), 0.0), IDENTITY, 0.5, {})
        )


def _train_reader(monkeypatch):
    """bench/train_reader.py as a module."""
    spec = importlib.util.spec_from_file_location("train_reader", ROOT / "bench" / "train_reader.py")
    train = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "train_reader", train)  # its dataclasses look their module up
    spec.loader.exec_module(train)
    return train


def test_a_threshold_judged_on_the_untraced_corpora_ignores_the_traced_ones(monkeypatch):
    """``--threshold-on untraced``: the threshold that holds 5 % wrong on the corpora no rule was traced on, however
    right the traced corpora's confident quotes are."""
    train = _train_reader(monkeypatch)
    traced = sorted(train.RULES_TRACED)[0]
    questions = [{"corpus": traced}] * 22 + [{"corpus": "unseen-docs"}] * 22
    unanswerable = [("unanswerable", False, 0.1)] * 2
    outcomes = [("literal", True, 0.9)] * 20 + unanswerable  # traced: every confident quote right
    outcomes += [("literal", True, 0.9)] * 10 + [("literal", False, 0.6)] * 8 + [("literal", False, 0.8)] * 2
    outcomes += unanswerable
    every = train.choose_threshold(train.judged_on(questions, "all")(outcomes), 0.05, 0.9)
    untraced = train.choose_threshold(train.judged_on(questions, "untraced")(outcomes), 0.05, 0.9)
    assert every == pytest.approx(0.8)  # 2 wrong of 40 answerable: within 5 % only thanks to the traced corpora
    assert train.rates(outcomes[22:], every)["wrong"] == pytest.approx(0.1)  # 2 of the untraced 20
    assert untraced == pytest.approx(0.9)
    assert train.rates(outcomes[22:], untraced)["wrong"] == 0.0


@pytest.mark.skipif(not DATA, reason="no committed training data")
def test_retraining_reproduces_the_shipped_weights(tmp_path, monkeypatch, capsys):
    train = _train_reader(monkeypatch)
    out = tmp_path / "weights.json"
    served = ROOT / "bench" / "reader" / "served_dev.jsonl"  # the units the agent reads: the relevant chunks' only
    monkeypatch.setattr(sys, "argv", ["train_reader.py", "--out", str(out), "--served", str(served)])
    assert train.main() == 0
    printed = capsys.readouterr().out.splitlines()

    def rates(label: str) -> list[int]:
        row = next(line for line in printed if label in line)
        return [int(cell.strip(" %")) for cell in row.split("|")[3:7]]

    every, served = rates("| reader, gate"), rates("read on the relevant chunks")
    # reading only the units of the chunks the agent grades relevant does as well as reading every retrieved unit,
    # within the limits the threshold was chosen for (5 % wrong, 90 % honest)
    assert served[0] >= every[0] - 5 and served[2] <= 5 and served[3] >= 90, (every, served)
    shipped = ReaderModel.shipped()
    fresh = json.loads(out.read_text())
    for part in ("selector", "calibrator"):
        assert fresh[part]["features"] == list(getattr(shipped, part).features)
        assert fresh[part]["weights"] == pytest.approx(list(getattr(shipped, part).weights), abs=1e-5)
        assert fresh[part]["bias"] == pytest.approx(getattr(shipped, part).bias, abs=1e-5)
    assert fresh["threshold"] == pytest.approx(shipped.threshold, abs=1e-5)
    assert fresh["meta"]["sha256"] == shipped.meta["sha256"]  # the committed data is what they were fitted on


async def test_closest_passages_are_distinct_factual_units_best_first():
    docs = [
        Document("The default timeout is 30 seconds. Retries are off.\n\n```python\nClient(timeout=30)\n```"),
        Document("The default timeout is 30 seconds."),  # the same unit, held by an overlapping chunk
    ]
    settings = EvidenceSettings(use_embeddings=False)
    for scorer in (EvidenceScorer(settings), ReadingScorer(settings, model=_model())):
        closest = await scorer.closest("What is the default timeout?", docs, k=3)
        texts = [m.sentence for m in closest]
        assert texts[0] == "The default timeout is 30 seconds.", type(scorer)
        assert len(texts) == len(set(texts)) and all(m.factual for m in closest)
        assert "Client(timeout=30)" not in texts  # a code line is not a passage to offer
        assert len(await scorer.closest("What is the default timeout?", docs, k=1)) == 1


def test_a_unit_whose_chunk_lacks_a_question_term_is_quoted_only_when_the_evidence_says_it_answers():
    rows = [_unit(coverage=1.0, missing=0.2), _unit(coverage=0.25)]  # "how much did it weigh?": no "weigh"
    assert _model(threshold=0.3).read(rows)[0] == 0
    assert _model(threshold=0.3).choose(rows) is None
    rows[0]["answers"] = True  # the rules allow it (a paraphrase naming new code, a named answer category)
    assert _model(threshold=0.3).choose(rows)[0] == 0
    rows[0] |= {"answers": False, "missing": 0.0, "conditional": True}  # "If used with `--quiet`, …": not for `--check`
    assert _model(threshold=0.3).choose(rows) is None


def test_the_gate_weighs_a_lacking_term_by_its_rarity_in_the_knowledge_base():
    rows = [_unit(coverage=1.0, missing=0.3, missing_kb=0.08), _unit(coverage=0.25)]  # lacks only a common word
    assert _model(threshold=0.3).choose(rows) is None  # the default gate: the chunk must lack nothing
    model = ReaderModel(_model().selector, _model().calibrator, 0.3, {}, gate=0.1)
    assert model.choose(rows)[0] == 0
    rows[0]["missing_kb"] = 0.5  # lacks the term no chunk of the knowledge base holds
    assert model.choose(rows) is None


def test_missing_weights_count_a_term_every_chunk_holds_for_little():
    from rags_expert.evidence.reader.features import missing_weights
    from rags_expert.evidence.text import TermFrequencies

    kb = TermFrequencies.of(
        [f"Gunicorn page {i}: set the workers and the timeout." for i in range(20)] + ["The backlog is 2048."]
    )
    docs = [
        Document("The backlog is 2048.", metadata={"title": "Settings", "section": "backlog"}),
        Document("Gunicorn sets the workers.", metadata={"title": "Design"}),
    ]
    common, rare = missing_weights("What backlog does Gunicorn set?", docs, kb)
    assert 0 < common < 0.3  # lacks only "Gunicorn" and "set", which nearly every chunk holds
    assert rare > 0.5  # lacks "backlog", which one chunk of 21 holds
    assert kb.idf("http/3") > kb.idf("backlog") > kb.idf("gunicorn")
    # without the knowledge base's frequencies, the retrieved chunks' own
    assert missing_weights("What backlog does Gunicorn set?", docs, None)[0] > common


def test_the_topic_is_the_questions_names_most_chunks_hold():
    from rags_expert.evidence.text import TermFrequencies

    kb = TermFrequencies.of(["Quokka runs workers."] * 3 + ["The backlog is 2048.", "Send HUP to reload."] * 2)
    assert kb.topic("What is the default backlog of Quokka?", 0.3) == {"quokka"}  # 3 of 7 chunks
    assert kb.topic("What is the default backlog of Quokka?", 0.5) == frozenset()
    assert kb.topic("Does Quokka export metrics to Prometheus?", 0.3) == {"quokka"}  # a name no chunk holds is not
    assert TermFrequencies.of([]).topic("What is Quokka?", 0.3) == frozenset()
