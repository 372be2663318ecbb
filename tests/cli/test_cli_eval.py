"""``rags-expert eval QUESTIONS`` as a user runs it (subprocesses): a small knowledge base of ours, a scripted model
on 127.0.0.1 that answers one question right, one wrong, finds only part of a third and nothing for a fourth;
``--compare`` with a run where a right answer went wrong; the CI gate's exit codes; malformed question files; a
judge that fails or answers garbage."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, error, held, prompt_text, request_kind, tag_content

pytestmark = pytest.mark.slow

DOCS = {
    "castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n",
    "cheese.md": "# Cheese\n\nMura valley cheese is aged for nine months in limestone cellars.\n",
}
QUESTIONS = [
    {
        "id": "castle",
        "question": "When was Castle Varen built?",
        "patterns": ["\\b1412\\b"],
        "sources": ["castle.md"],
        "tags": ["history"],
    },
    {"id": "cheese", "question": "How long is Mura valley cheese aged?", "answer": "nine months", "tags": ["food"]},
    {"id": "season", "question": "In which season of which year was Castle Varen built?", "patterns": ["1412"]},
    {"id": "moon", "question": "Who founded the moon base?", "kind": "unanswerable"},
]


def model(castle_year: str = "1412", judge: Any = '{"same": false}'):
    """A scripted model for :data:`QUESTIONS`: relevant chunks share a word with the question, the cheese answer
    is wrong, the season question is never answered usefully, the judge replies ``judge``."""

    def script(body: dict[str, Any]) -> Any:
        if "<expected>" in prompt_text(body):  # the judge (prompts/judge_answer.txt)
            return judge(body) if callable(judge) else judge
        kind = request_kind(body)
        question = tag_content(body, "question").lower()
        if kind == "relevance":
            chunk = tag_content(body, "chunk").lower()
            return {
                "relevant": ("castle" in question and "castle" in chunk) or ("cheese" in question and "cheese" in chunk)
            }
        if kind == "grounded":
            return {"grounded": True}
        if kind == "useful":
            return {"useful": "season" not in question}
        if kind == "rephrase":
            return {"query": question}
        if "built in 1412" not in prompt_text(body):  # the context holds only the cheese chunk
            return "Mura valley cheese is aged for two weeks [1]."
        return f"Castle Varen was built in {castle_year} [1]."

    return script


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A folder for the run's files and the CLI environment of the two-document knowledge base."""
    root = tmp_path_factory.mktemp("eval")
    return root, cli_env(ingest_docs(root, DOCS))


def evaluate(env: dict[str, str], script, args: list[str]) -> tuple[Any, list[Any]]:
    """``rags-expert eval ARGS`` against ``script``; the finished process and the model's requests."""
    with OpenAIServer(script) as server:
        done = run_cli(["eval", *args], {**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url}, timeout=300)
        return done, list(server.requests)


def verdicts(out: Path) -> dict[str, str]:
    report = json.loads((out / "report.json").read_text())
    return {r["id"]: r["verdict"] for r in report["results"]}


@pytest.fixture(scope="module")
def first_run(kb) -> tuple[Any, list[Any], Path]:
    """The four questions, gates that hold."""
    root, env = kb
    questions = write_jsonl(root / "questions.jsonl", QUESTIONS)
    out = root / "run1"
    done, requests = evaluate(
        env, model(), [str(questions), "--out", str(out), "--min-right", "30%", "--max-wrong", "0.25"]
    )
    return done, requests, out


def test_a_run_scores_right_wrong_partial_and_honest(first_run):
    done, requests, out = first_run
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert verdicts(out) == {"castle": "right", "cheese": "wrong", "season": "partial", "moon": "honest"}
    report = json.loads((out / "report.json").read_text())
    castle = next(r for r in report["results"] if r["id"] == "castle")
    assert castle["cited"] and castle["cited_expected"] is True and castle["sources"][0]["source"].endswith("castle.md")
    assert castle["llm_calls"] > 0 and castle["seconds"] > 0 and castle["citations"]
    assert report["summary"]["right_cited"] == 1 and report["summary"]["honest_rate"] == 1.0
    # only the answer-text question reached the judge, once
    assert sum("<expected>" in prompt_text(r.body) for r in requests) == 1
    assert report["meta"]["judge"] == {"model": "gpt-4o-mini", "calls": 1, "faults": []}
    lines = done.stdout.splitlines()
    assert lines[0] == "judged by: patterns, else the model judge (gpt-4o-mini)"
    assert lines[1].split()[:5] == ["group", "n", "right+cited", "right", "wrong"]
    rows = {line.split("  ")[0].strip(): line.split() for line in lines[3:8]}
    assert rows["all"][:6] == ["all", "4", "1/3", "1/3", "1/4", "1"]
    assert set(rows) == {"all", "kind: answerable", "kind: unanswerable", "tag: history", "tag: food"}
    assert "gate: met" in lines
    assert (out / "report.png").stat().st_size > 1000
    assert "eval 1/4: right" in done.stderr and "eval 4/4: honest" in done.stderr


def test_compare_lists_the_regression_first_and_the_gate_fails(kb, first_run):
    root, env = kb
    questions = root / "questions.jsonl"
    out = root / "run2"
    done, _ = evaluate(
        env,
        model(castle_year="1500", judge='{"same": true}'),
        [str(questions), "--out", str(out), "--compare", str(first_run[2] / "report.json"), "--min-right", "0.5"],
    )
    assert done.returncode == 1, done.stderr
    assert verdicts(out)["castle"] == "wrong" and verdicts(out)["cheese"] == "right"
    after = done.stdout.split("compared with ", 1)[1].splitlines()
    assert after[0].startswith(f"{first_run[2] / 'report.json'} (run at 20")
    assert after[1:3] == ["regression: castle: right -> wrong", "newly right: cheese: wrong -> right"]
    assert "right: 1 -> 1 (+0)" in done.stdout.splitlines() and "wrong: 1 -> 1 (+0)" in done.stdout.splitlines()
    assert done.stderr.splitlines()[-1] == (
        "gate not met: right+cited 33% of answerable questions is below --min-right 50%"
    )
    assert "gate: not met" in done.stdout.splitlines()


def test_a_judge_that_fails_or_answers_garbage_leaves_the_question_unjudged(kb):
    root, env = kb
    rows = [
        {"id": "garbage", "question": "When was Castle Varen built?", "answer": "1412"},
        {"id": "failing", "question": "Which year saw Castle Varen built?", "answer": "1412"},
    ]
    questions = write_jsonl(root / "judged.jsonl", rows)

    def judge(body: dict[str, Any]) -> Any:
        return "Well, it could be the same." if "When was" in prompt_text(body) else error(500, "judge down")

    done, _ = evaluate(env, model(judge=judge), [str(questions), "--out", str(root / "run3"), "-q"])
    assert done.returncode == 0, done.stderr
    assert verdicts(root / "run3") == {"garbage": "unjudged", "failing": "unjudged"}
    report = json.loads((root / "run3" / "report.json").read_text())
    assert report["summary"]["right"] == 0 and report["summary"]["unjudged"] == 2
    garbage, failing = report["meta"]["judge"]["faults"]
    assert garbage == "unreadable reply: Well, it could be the same."
    assert failing == "OpenAIAPIError: Error code: 500 - judge down"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "broken.jsonl",
            '{"question": "When was Castle Varen built?", "patterns": ["1412"]}\n{"question": "When\n',
            "broken.jsonl line 2: not JSON (Unterminated string starting at: line 1 column 14 (char 13))",
        ),
        (
            "typo.jsonl",
            '\n{"question": "When was Castle Varen built?", "pattern": ["1412"]}\n',
            "typo.jsonl line 2: unknown field(s) pattern (known: answer, id, kind, patterns, question, sources, tags)",
        ),
        (
            "bad.yaml",
            "- question: When was Castle Varen built?\n  answer: '1412'\n- question: Who built it?\n  kind: answerable\n",
            "bad.yaml line 3: an answerable question needs an 'answer' or 'patterns'",
        ),
        (
            "regex.csv",
            'question,patterns\nWhen was Castle Varen built?,1412\nWho built it?,"[""Albrecht(""]"\n',
            "regex.csv line 3: pattern 'Albrecht(' is not a regular expression (missing ), unterminated subpattern at "
            "position 8)",
        ),
        (  # read leniently, the rest of the file was one question, "honest", exit 0
            "quote.csv",
            'question,patterns\nWhen was Castle Varen built?,1412\n"Who built it?,Albrecht\nWho founded the moon '
            "base?,\n",
            'quote.csv line 3: a quote opened on this line is never closed (an unbalanced "): close it, or write a '
            'quote inside a quoted cell as ""',
        ),
    ],
)
def test_a_malformed_question_file_is_one_line_naming_the_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = run_cli(["eval", str(path)], cli_env(tmp_path / "data"), timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {path.parent}/{message}"]
    assert done.stdout == ""


def test_a_compare_file_that_is_no_report_is_an_error_before_any_question(tmp_path):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:1])
    old = tmp_path / "old.json"
    old.write_text('{"results": []}')
    done = run_cli(["eval", str(questions), "--compare", str(old)], cli_env(tmp_path / "data"), timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: --compare {old}: not a report.json of rags-expert eval (format rags-expert-eval/1): name a "
        "report.json that rags-expert eval wrote"
    ]


@pytest.mark.parametrize(
    ("summary", "results", "fault"),
    [
        (None, [{"id": "castle", "verdict": "right"}], "a report.json of rags-expert eval without its 'summary'"),
        ({"right": 1}, [{"verdict": "right"}], "result 1 has no 'id'"),
    ],
    ids=["no-summary", "result-without-id"],
)
def test_a_malformed_compare_report_is_an_error_before_any_question(kb, tmp_path, summary, results, fault):
    """A report with the right format marker but without what a comparison reads (it failed after every question
    with KeyError, and the --min-right gate was never evaluated)."""
    root, env = kb
    old = tmp_path / "old.json"
    report = {"format": "rags-expert-eval/1", "meta": {}, "results": results}
    old.write_text(json.dumps(report if summary is None else {**report, "summary": summary}))
    questions = write_jsonl(root / "one.jsonl", QUESTIONS[:1])
    done, requests = evaluate(env, model(), [str(questions), "--compare", str(old), "--min-right", "1"])
    assert (done.returncode, done.stdout, requests) == (2, "", [])
    assert done.stderr.splitlines() == [
        f"error: --compare {old}: {fault}: name a report.json that rags-expert eval wrote"
    ]


@pytest.mark.parametrize("place", ["file", "under-a-file"])
def test_an_out_that_cannot_be_written_is_an_error_before_any_question(kb, tmp_path, place):
    """``--out`` naming a file, or a folder that cannot be made (it failed after every question, results lost)."""
    root, env = kb
    taken = tmp_path / "taken.txt"
    taken.write_text("not a folder")
    out = taken if place == "file" else taken / "run"
    questions = write_jsonl(root / "one.jsonl", QUESTIONS[:1])
    done, requests = evaluate(env, model(), [str(questions), "--out", str(out)])
    assert (done.returncode, done.stdout, requests) == (2, "", [])
    assert done.stderr.splitlines() == [
        f"error: --out {out}: is a file, not a folder: name a folder for report.json and report.png"
        if place == "file"
        else f"error: --out {out}: cannot write there (Not a directory): name a folder you can write"
    ]


def test_a_judge_that_times_out_says_so(kb):
    """The judge's fault names what went wrong (it read "TimeoutError:" with nothing after the colon)."""
    root, env = kb
    questions = write_jsonl(root / "timeout.jsonl", [QUESTIONS[1]])
    with_timeout = {**env, "RAGS_EXPERT_EVALUATION__JUDGE_TIMEOUT": "1"}
    done, _ = evaluate(with_timeout, model(judge=lambda body: held("{}")), [str(questions), "--out", str(root / "t")])
    assert done.returncode == 0, done.stderr
    (fault,) = json.loads((root / "t" / "report.json").read_text())["meta"]["judge"]["faults"]
    assert fault == "TimeoutError: no reply within 1 s (evaluation.judge_timeout)"
    assert f"the judge failed: {fault}" in done.stderr


def _answered(partial: Path) -> int:
    """How many questions the partial report holds (0 while there is none, or it is being replaced)."""
    try:
        return int(json.loads(partial.read_text())["meta"]["answered"])
    except (OSError, ValueError, KeyError):
        return 0


def test_ctrl_c_keeps_the_answers_in_a_partial_report_and_resume_asks_only_the_rest(kb):
    """SIGINT after the first question: exit 130, one line saying where the answers are, a report marked partial;
    a rerun refuses to overwrite it, ``--resume`` asks only the three other questions and writes the whole report
    (Ctrl-C exited 130 with no report and no message: every answer lost)."""
    root, env = kb
    questions = write_jsonl(root / "questions.jsonl", QUESTIONS)
    out = root / "interrupted"
    partial = out / "report.partial.json"

    def stuck_on_cheese(body: dict[str, Any]) -> Any:
        return held("...") if "cheese" in tag_content(body, "question").lower() else model()(body)

    with OpenAIServer(stuck_on_cheese) as server:
        running = subprocess.Popen(
            [sys.executable, "-m", "rags_expert.cli", "eval", str(questions), "--out", str(out)],
            env={**env, "RAGS_EXPERT_LLM__BASE_URL": server.base_url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            deadline = time.monotonic() + 240
            while _answered(partial) < 1 and running.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _answered(partial) == 1, running.stderr.read() if running.poll() is not None else "timed out"
            running.send_signal(signal.SIGINT)
            _, err = running.communicate(timeout=60)
        finally:
            running.kill()
    assert running.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"interrupted: 1 of 4 questions answered, kept in {partial} (marked partial); add --resume to the same "
        "command to ask the rest"
    )
    report = json.loads(partial.read_text())
    assert report["meta"]["partial"] is True and report["meta"]["questions_total"] == 4
    assert [(r["id"], r["verdict"]) for r in report["results"]] == [("castle", "right")]
    assert not (out / "report.json").exists()

    again, requests = evaluate(env, model(), [str(questions), "--out", str(out)])
    assert (again.returncode, requests) == (2, [])
    assert again.stderr.splitlines() == [
        f"error: --out {out} holds the partial report of an interrupted run (1 questions answered): add --resume to "
        f"ask only the rest, or delete {partial} to start over"
    ]

    other, requests = evaluate(env, model(), [str(questions), "--out", str(out), "--resume", "--model", "other"])
    assert (other.returncode, requests) == (2, [])
    assert other.stderr.splitlines()[-1] == (
        f"error: --resume: {partial} holds answers of the model 'gpt-4o-mini', not 'other': resume with that model, "
        f"or delete {partial} to start over"
    )

    resumed, requests = evaluate(env, model(), [str(questions), "--out", str(out), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert "When was Castle Varen built?" not in {tag_content(r.body, "question") for r in requests}
    assert verdicts(out) == {"castle": "right", "cheese": "wrong", "season": "partial", "moon": "honest"}
    report = json.loads((out / "report.json").read_text())
    assert "partial" not in report["meta"] and report["meta"]["resumed_with"] == 1
    assert report["summary"]["questions"] == 4
    assert not partial.exists()
