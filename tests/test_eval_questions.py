"""Question sets in every accepted format, and the scoring of replies without a model (rags_expert.evaluation)."""

from __future__ import annotations

import pytest

from rags_expert.evaluation.compare import change
from rags_expert.evaluation.questions import QuestionSetError, load_question_set
from rags_expert.evaluation.scoring import Reply, score, score_plain


def test_yaml_and_csv_sets_read_like_jsonl(tmp_path):
    yaml_file = tmp_path / "q.yaml"
    yaml_file.write_text(
        "questions:\n"
        "  - question: When was Castle Varen built?\n"
        "    patterns: ['1412']\n"
        "    tags: history\n"
        "  - question: Who founded the moon base?\n"
    )
    csv_file = tmp_path / "q.csv"
    csv_file.write_text(
        'id,question,answer,sources,tags\nc1,When was Castle Varen built?,1412,castle.md,"[""history"", ""x""]"\n'
        "c2,Who founded the moon base?,,,\n"
    )
    castle, moon = load_question_set(yaml_file)
    assert (castle.line, castle.kind, castle.patterns, castle.tags, castle.id) == (
        2,
        "answerable",
        ("1412",),
        ("history",),
        "When was Castle Varen built?",
    )
    assert (moon.line, moon.kind) == (5, "unanswerable")
    c1, c2 = load_question_set(csv_file)
    assert (c1.id, c1.answers, c1.sources, c1.tags, c1.line) == ("c1", ("1412",), ("castle.md",), ("history", "x"), 2)
    assert (c2.kind, c2.line) == ("unanswerable", 3)


def test_a_repeated_id_names_both_lines(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": 1, "question": "a?"}\n\n{"id": "1", "question": "b?"}\n')
    with pytest.raises(QuestionSetError, match=r"q\.jsonl line 3: id '1' repeats line 1$"):
        load_question_set(path)


def test_an_empty_set_is_an_error(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("\n\n")
    with pytest.raises(QuestionSetError, match="no questions"):
        load_question_set(path)


def _question(tmp_path, line: str):
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n")
    return load_question_set(path)[0]


def test_containment_ignores_case_thousands_separators_and_citation_markers(tmp_path):
    q = _question(tmp_path, '{"question": "How many?", "answer": "1,871 stones", "sources": ["a/b.md"]}')
    cited = {"n": 1, "source": "/docs/a/b.md", "content": "..."}
    right = score_plain(q, Reply(0, "It has 1871 [1] Stones.", {"sources": [cited]}))
    assert (right.verdict, right.judged_by, right.cited, right.cited_expected) == ("right", "contains", True, True)
    assert score_plain(q, Reply(0, "It has 1872 stones [1].", {"sources": [cited]})).verdict == "wrong"
    assert (
        score_plain(
            q, Reply(0, "It has 1871 stones.", {"sources": [cited | {"source": "/docs/c/b.md"}]})
        ).cited_expected
        is False
    )


async def test_the_judge_decides_only_answered_answerable_questions(tmp_path):
    q = _question(tmp_path, '{"question": "How many?", "answer": "1871"}')
    asked = []

    async def judge(question, expected, answer):
        asked.append(answer)
        return None

    assert (await score(q, Reply(0, "1871 [1]."), judge)).verdict == "unjudged"
    assert (await score(q, Reply(1, "Not found; 1871 perhaps."), judge)).verdict == "partial"
    assert (await score(q, Reply(2, "", error="boom"), judge)).verdict == "error"
    assert asked == ["1871."]


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("right", "wrong", "regression"),
        ("honest", "error", "regression"),
        ("not_found", "wrong", "newly wrong"),
        ("wrong", "right", "newly right"),
        ("not_found", "partial", "changed"),
        ("right", "right", None),
    ],
)
def test_changes_are_ranked_worst_first(old, new, kind):
    assert change(old, new) == kind


def test_the_example_set_over_our_docs_is_answered_there():
    """examples/eval/docs-questions.jsonl (docs/evaluation.md): each answerable question's fact is in the file it
    names under docs/ (the README's knowledge base, less what docs/.ragsignore leaves out), no pattern matches its
    own question, and the set lives outside docs/ so it is not ingested as its own answer."""
    import re
    from pathlib import Path

    from rags_expert.evaluation.scoring import normalise
    from rags_expert.retrieval.loaders import ignore_patterns, is_ignored

    root = Path(__file__).resolve().parents[1]
    left_out = ignore_patterns(root / "docs")
    questions = load_question_set(root / "examples" / "eval" / "docs-questions.jsonl")
    assert {q.kind for q in questions} == {"answerable", "unanswerable"}
    for q in questions:
        if q.kind == "unanswerable":
            continue
        (source,) = q.sources
        assert not is_ignored(source, left_out), f"{q.id}: docs/.ragsignore leaves out {source}"
        text = (root / "docs" / source).read_text(encoding="utf-8")
        if q.patterns:
            assert any(re.search(p, text, re.IGNORECASE) for p in q.patterns), q.id
            assert not any(re.search(p, q.question, re.IGNORECASE) for p in q.patterns), q.id
        else:
            assert all(normalise(a) in normalise(text) for a in q.answers), q.id


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # read leniently, lines 3-5 were one question: "Who built it?,Albrecht\nWhere?,..."
            'question,patterns\nWhen was it built?,1412\n\n"Who built it?,Albrecht\nWhere is it?,Mura\n',
            'line 4: a quote opened on this line is never closed (an unbalanced "): close it, or write a quote inside '
            'a quoted cell as ""',
        ),
        (
            'question,patterns\nWhen was it built?,1412\n"Who built it?,Albrecht\nWhere"?,Mura\nWhy?,x\n',
            "line 3: not CSV (',' expected after '\"')",
        ),
    ],
    ids=["never-closed", "closed-mid-cell"],
)
def test_an_unbalanced_quote_in_csv_is_an_error_naming_its_line(tmp_path, text, message):
    path = tmp_path / "q.csv"
    path.write_text(text)
    with pytest.raises(QuestionSetError) as raised:
        load_question_set(path)
    assert str(raised.value) == f"{path} {message}"


def _result(ident: str, verdict: str = "right"):
    from rags_expert.evaluation.scoring import Result

    return Result(ident, f"{ident}?", "answerable", [], verdict, 0, "x", "", False, None, "patterns", 0.1, 1, 10)


def test_a_run_report_is_partial_until_it_finishes_and_resumable_meanwhile(tmp_path):
    """Each result is in report.partial.json as soon as it is added; report.json only at the end, in question order."""
    from rags_expert.evaluation.report import PARTIAL, RunReport, load_report, resumable

    run = RunReport(tmp_path, lambda: {"model": "m"}, 3, [])
    run.write_partial()
    assert resumable(tmp_path) is None  # nothing answered yet: nothing to resume
    run.add(_result("b"))
    meta, results = resumable(tmp_path) or ({}, [])
    assert (meta["partial"], meta["answered"], meta["questions_total"], results) == (True, 1, 3, [_result("b")])
    assert not (tmp_path / "report.json").exists()
    run = RunReport(tmp_path, lambda: {"model": "m"}, 3, results)
    run.add(_result("a", "wrong"))
    run.add(_result("c"))
    report = run.finish(["a", "b", "c"])
    assert [r["id"] for r in report["results"]] == ["a", "b", "c"] and "partial" not in report["meta"]
    assert load_report(tmp_path / "report.json")["summary"]["right"] == 2
    assert not (tmp_path / PARTIAL).exists()


@pytest.mark.parametrize(
    ("report", "fault"),
    [
        ({"results": []}, "not a report.json of rags-expert eval (format rags-expert-eval/1)"),
        ({"format": "rags-expert-eval/1", "results": []}, "a report.json of rags-expert eval without its 'summary'"),
        ({"format": "rags-expert-eval/1", "summary": {}, "results": [{"verdict": "right"}]}, "result 1 has no 'id'"),
        ({"format": "rags-expert-eval/1", "summary": {}, "results": [{"id": "a"}]}, "result 1 has no 'verdict'"),
    ],
)
def test_a_report_without_what_a_comparison_reads_is_refused_naming_what_lacks(tmp_path, report, fault):
    import json

    from rags_expert.evaluation.report import ReportError, load_report

    path = tmp_path / "old.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ReportError) as raised:
        load_report(path)
    assert str(raised.value) == f"{path}: {fault}"


def test_an_out_folder_is_checked_before_any_question(tmp_path):
    from rags_expert.evaluation.report import ReportError, check_out

    check_out(tmp_path / "new" / "out")
    assert (tmp_path / "new" / "out").is_dir()
    (tmp_path / "taken").write_text("x")
    with pytest.raises(ReportError, match=r"is a file, not a folder"):
        check_out(tmp_path / "taken")
    with pytest.raises(ReportError, match=r"cannot write there \(Not a directory\): name a folder you can write$"):
        check_out(tmp_path / "taken" / "out")
