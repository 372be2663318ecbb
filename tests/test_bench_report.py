"""docs/benchmarks.md is generated from bench/results/*.json by bench/report.py, and the results are well formed.

The page of current results is checked against its sources like docs/graphs.md against the graphs: a result
recorded without regenerating the page, or a page edited by hand, fails here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from test_doc_anchors import anchors

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import report  # noqa: E402
import results  # noqa: E402

TABLE = "| k | ms |\n|---|---|\n| 4 | 241 |\n| 8 | 274 |"


def test_the_page_is_what_the_results_give():
    assert report.main(["--check"]) == 0, "docs/benchmarks.md is out of date: run python bench/report.py"


def test_every_result_has_its_command_commit_date_and_a_full_table():
    found = results.load()
    assert found, "no results in bench/results/"
    for r in found:
        name = r["benchmark"]
        assert (results.RESULTS / f"{name}.json").is_file(), name
        assert r["title"] and r["command"] and r["commit"] and r["machine"], name
        assert len(r["measured"]) == 10 and r["measured"][4] == "-", name
        assert r["rows"] and all(len(row) == len(r["columns"]) for row in r["rows"]), name


def test_carried_over_results_name_a_heading_of_the_history():
    history = anchors(ROOT / "docs" / "benchmarks-history.md")
    for r in results.load():
        if "source" in r:
            page, _, anchor = r["source"].partition("#")
            assert page == "docs/benchmarks-history.md" and anchor in history, r["benchmark"]
    assert set(report.history_headings()) == history  # the report's slugs are the toc's


def test_the_page_links_the_history_once_and_stays_short():
    page = report.PAGE.read_text(encoding="utf-8")
    assert page.count("](benchmarks-history.md") == 1
    # 400 until issue 53 added the hostile-files table, 420 until issue 52 its two, 440 until issue 54 its stage
    # profile, real-docs speed, test-suite, ingest and first-answer tables
    assert page.count("\n") < 540


def test_a_recorded_table_renders_in_its_section_with_command_and_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench/speed_cost.py", "--latency", "0.3", "--record", str(tmp_path)])
    head = "0123456789abcdef" * 2 + "01234567"
    monkeypatch.setattr(results, "git", lambda *args: head if args[0] == "rev-parse" else " M rags_expert/x.py")
    path = results.record(tmp_path, "speed_cost", "Happy path", TABLE, notes="Two rows.")
    assert path == tmp_path / "speed_cost.json"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    assert recorded["command"] == "python bench/speed_cost.py --latency 0.3"
    assert recorded["columns"] == ["k", "ms"] and recorded["rows"] == [["4", "241"], ["8", "274"]]
    assert recorded["commit"] == head and recorded["uncommitted"] and "source" not in recorded
    anchor = "grading-latency-issue-2"
    results.write(
        tmp_path,
        recorded | {"benchmark": "zz_new", "title": "Something new", "commit": "abc1234", "source": f"x#{anchor}"},
    )
    results.write(tmp_path, recorded | {"benchmark": "real_docs_test", "title": "Real docs", "measured": "2026-01-02"})

    page = report.render(results.load(tmp_path))
    sections = [line for line in page.splitlines() if line.startswith("## ")]
    assert sections == ["## Quality", "## Speed and cost", "## Other results"]
    assert page.index("### Real docs") < page.index("### Happy path") < page.index("### Something new")
    assert "`python bench/speed_cost.py --latency 0.3` · measured on `0123456` with uncommitted changes (" in page
    assert "Two rows." in page and "| 4 | 241 |" in page
    assert "measured on `abc1234`" in page and "Carried over from the history (“Grading latency (issue 2)”)" in page
    assert report.render(list(reversed(results.load(tmp_path)))) == page  # the order of the files does not matter


def test_check_fails_on_a_stale_page_and_passes_once_written(tmp_path):
    results.write(
        tmp_path,
        {"benchmark": "a", "title": "A", "command": "python bench/a.py", "commit": "abc1234", "measured": "2026-01-01"}
        | {"machine": "2 CPUs", "columns": ["x"], "rows": [["1"]]},
    )
    page = tmp_path / "benchmarks.md"
    args = ["--results", str(tmp_path), "--page", str(page)]
    assert report.main([*args, "--check"]) == 1
    assert report.main(args) == 0
    assert report.main([*args, "--check"]) == 0
    page.write_text(page.read_text() + "edited by hand\n")
    assert report.main([*args, "--check"]) == 1


def test_a_source_that_is_no_heading_of_the_history_is_refused(tmp_path):
    bad = {"benchmark": "a", "title": "A", "command": "c", "commit": "abc1234", "measured": "2026-01-01"}
    bad |= {"machine": "m", "source": "docs/benchmarks-history.md#nowhere", "columns": ["x"], "rows": [["1"]]}
    with pytest.raises(ValueError, match="nowhere"):
        report.render([bad])


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["bench/x.py", "--record"], "python bench/x.py"),
        (["bench/x.py", "--record", "/tmp/r", "--split", "dev"], "python bench/x.py --split dev"),
        (
            ["bench/x.py", "--split", "dev", "--record=/tmp/r", "--env", "A=b c"],
            "python bench/x.py --split dev --env 'A=b c'",
        ),
    ],
)
def test_the_recorded_command_leaves_out_record(argv, shown):
    assert results.command_line([str(ROOT / argv[0]), *argv[1:]]) == shown


def test_tables_are_parsed_as_printed():
    text = "title\n\n| a | `b|c` | d \\| e |\n|---|:---:|---:|\n| 1 | 2 | 3 |\n\nafter"
    assert results.parse_table(text) == (["a", "`b|c`", "d \\| e"], [["1", "2", "3"]])
    with pytest.raises(ValueError):
        results.parse_table("no table here")
    with pytest.raises(ValueError):
        results.parse_table("| a | b |\n|---|---|\n| 1 |")


def test_every_caption_is_one_line_of_at_most_the_limit():
    for r in results.load():
        line = report.caption(r)
        assert "\n" not in line and len(line.split(" More in `")[0]) <= report.CAPTION_CHARS, r["benchmark"]


def test_a_caption_too_long_is_refused():
    with pytest.raises(ValueError, match="caption of"):
        report.caption({"benchmark": "x", "caption": "word " * 60})
    assert report.caption({"benchmark": "x", "notes": "One. Two."}) == "One. More in `bench/results/x.json`."


def test_the_readme_quotes_no_measured_rate_or_time_a_question():
    """Measured numbers live on the results page, generated from the runs; the README links to it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?ms)^```.*?^```", "", text))
    assert re.findall(r"\d+(?:\.\d+)? ?%|\d+(?:\.\d+)? s a question", prose) == []
