"""The ``eval`` subcommand of ``rags-expert``: the agent on a question set of yours, or on HotpotQA.

``rags-expert eval QUESTIONS.jsonl`` (or ``.yaml``, ``.csv``) asks every question of the set against the configured
knowledge base (``--ingest DIR`` ingests DIR first), scores each reply (docs/evaluation.md), shows a progress bar,
prints a table grouped by kind and tag and writes ``<out>/report.json`` and ``<out>/report.png``. ``--compare
OLD.json`` prints what changed since an earlier run; ``--min-right`` / ``--max-wrong`` make it a CI gate. ``--out``
and ``--compare`` are checked before the first question; each answer is kept in ``<out>/report.partial.json`` as
its question ends, so an interrupted run (Ctrl-C: one line saying where) loses nothing and ``--resume`` asks only
the questions it lacks.

``rags-expert eval hotpotqa [--split dev]`` runs the built-in HotpotQA set (:mod:`rags_expert.evaluation.hotpotqa`).

Exit codes: 0 the evaluation ran (and its gates held); 1 a gate was not met; 2 an error (a malformed question
file or report, an ``--out`` that cannot be written, a failed ingestion, every question ending in an error); 130
interrupted (the partial report kept).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.ask import ASK_FLAGS, model_path_option
from rags_expert.cli.support import args_settings, positive_int, setting_type
from rags_expert.outcomes import Outcome
from rags_expert.settings import RagsExpertSettings

if TYPE_CHECKING:
    from rags_expert.evaluation.judge import Judge
    from rags_expert.evaluation.questions import Question
    from rags_expert.evaluation.scoring import Result

EVAL_FLAGS = {**ASK_FLAGS, "judge_model": "evaluation.judge_model"}
"""Flags of ``eval`` that override settings (argparse dest -> settings path)."""


def is_hotpotqa(args: argparse.Namespace) -> bool:
    """Whether the positional argument names the built-in HotpotQA set (not a file called ``hotpotqa``)."""
    return str(args.questions) == "hotpotqa" and not Path("hotpotqa").is_file()


def run(args: argparse.Namespace) -> int:
    """Dispatch: HotpotQA, or a question set of the user's."""
    return asyncio.run(evaluate_hotpotqa(args) if is_hotpotqa(args) else evaluate_questions(args))


# --- a question set of yours --------------------------------------------------------------------------------


def on_ctrl_c() -> asyncio.Event:
    """An event set by Ctrl-C (SIGINT), which also cancels the running task. The graph's own tasks may absorb that
    cancellation (a node in flight ends in an error instead), so the event, not the cancellation, says the run was
    interrupted: no question more is asked and the one in flight is not kept."""
    interrupted = asyncio.Event()
    task = asyncio.current_task()

    def stop() -> None:
        interrupted.set()
        if task is not None:
            task.cancel()

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop)
    return interrupted


async def evaluate_questions(args: argparse.Namespace) -> int:
    """Ask the question set, print the table (and the comparison), write the report; the exit code.

    ``--out`` and ``--compare`` are checked before anything is asked; every answer is kept in the partial report
    as its question ends (:class:`~rags_expert.evaluation.report.RunReport`), which ``--resume`` goes on from."""
    from rags_expert.evaluation.compare import comparison
    from rags_expert.evaluation.questions import QuestionSetError, load_question_set
    from rags_expert.evaluation.report import (
        PARTIAL,
        ReportError,
        RunReport,
        check_out,
        load_report,
        table,
        write_plot,
    )
    from rags_expert.evaluation.runner import ask_questions
    from rags_expert.hosts.progress import EvalProgress
    from rags_expert.local.server import maybe_local

    settings = cast(RagsExpertSettings, args_settings(args))
    try:
        questions = load_question_set(Path(args.questions))[: args.limit]
    except QuestionSetError as exc:
        return fail(str(exc))
    try:
        old = load_report(args.compare) if args.compare else None
    except ReportError as exc:
        return fail(f"--compare {exc}: name a report.json that rags-expert eval wrote")
    try:
        check_out(args.out)
        earlier = resumed_results(args, questions)
    except ReportError as exc:
        return fail(str(exc))
    if args.ingest and (code := ingest(args)) != 0:
        return code
    started = earlier[0].get("started") if earlier else None
    started = started or datetime.now(UTC).isoformat(timespec="seconds")
    done = earlier[1] if earlier else []
    finished = {r.id for r in done}
    todo = [q for q in questions if q.id not in finished]
    async with maybe_local(settings, args.local) as local:
        judge, judging = pick_judge(local.settings, args.local)
        judge_fn = judge.same_fact if judge is not None else None

        def meta() -> dict[str, Any]:
            return {
                "questions_file": str(args.questions),
                "started": started,
                "model": model_label(local.settings, args.local),
                "local": bool(args.local),
                "judging": judging,
                "judge": judge.summary() if judge is not None else None,
                "collection": local.settings.store.collection,
                "top_k": local.settings.retrieval.top_k,
                **({"resumed_with": len(done)} if done else {}),
            }

        model = model_label(local.settings, args.local)
        if earlier and earlier[0].get("model") != model:
            return fail(
                f"--resume: {args.out / PARTIAL} holds answers of the model {earlier[0].get('model')!r}, not "
                f"{model!r}: resume with that model, or delete {args.out / PARTIAL} to start over"
            )
        run = RunReport(args.out, meta, len(questions), done)
        run.write_partial()
        if not args.quiet:
            again = f", {len(done)} answered before (--resume)" if done else ""
            print(
                f"[{len(questions)} questions{again}, model {model_label(local.settings, args.local)}; {judging}]",
                file=sys.stderr,
            )
        await local.ready()
        progress = EvalProgress(len(todo), sys.stderr, args.quiet)

        def on_result(result: Result) -> None:
            run.add(result)
            progress.result(result.verdict, result.seconds, result.question)

        interrupted = on_ctrl_c()
        try:
            try:
                await ask_questions(
                    local.settings, todo, judge=judge_fn, on_result=on_result, stopped=interrupted.is_set
                )
            finally:
                progress.close()
                asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        except asyncio.CancelledError:
            if not interrupted.is_set():
                raise
        if interrupted.is_set():
            print(
                f"interrupted: {len(run.results)} of {len(questions)} questions answered, kept in "
                f"{run.partial_path} (marked partial); add --resume to the same command to ask the rest",
                file=sys.stderr,
            )
            raise KeyboardInterrupt  # exit 130
        report = run.finish([q.id for q in questions])
    results = run.results
    png_path = write_plot(report, args.out)
    print(f"judged by: {judging}")
    print(table(report))
    print(f"\nreport: {args.out / 'report.json'}")
    print(
        f"plot: {png_path}"
        if png_path
        else "plot skipped: matplotlib is not installed (pip install 'rags-expert[bench]')"
    )
    if old is not None:
        print("\n" + comparison(old, report, str(args.compare)))
    if results and all(r.verdict == "error" for r in results):
        return fail(f"every question ended in an error (the first: {results[0].error or results[0].reason})")
    return gate(report["summary"], args)


def resumed_results(args: argparse.Namespace, questions: list[Question]) -> tuple[dict[str, Any], list[Result]] | None:
    """The ``meta`` and the results to keep of the interrupted run in ``--out`` with ``--resume`` (those of
    questions still in the set, asked as they are now); None when there is nothing to resume. Without
    ``--resume`` a partial report with answers in it is a :class:`ReportError`: it is not overwritten unasked."""
    from rags_expert.evaluation.report import PARTIAL, ReportError, resumable

    earlier = resumable(args.out)
    if earlier is None:
        return None
    meta, results = earlier
    partial = args.out / PARTIAL
    if not args.resume:
        raise ReportError(
            f"--out {args.out} holds the partial report of an interrupted run ({len(results)} questions answered): "
            f"add --resume to ask only the rest, or delete {partial} to start over"
        )
    asked = {q.id: q.question for q in questions}
    return meta, [r for r in results if asked.get(r.id) == r.question]


def pick_judge(settings: RagsExpertSettings, local: bool) -> tuple[Judge | None, str]:
    """The judge for answer-text questions (None: containment decides) and how the report names the judging."""
    from rags_expert.evaluation.judge import Judge

    if local:
        return None, "patterns, else exact containment of the answer text (--local: no model judge)"
    if not settings.evaluation.judge:
        return None, "patterns, else exact containment of the answer text (evaluation.judge is off)"
    judge = Judge.from_settings(settings)
    return judge, f"patterns, else the {judge.label}"


def model_label(settings: RagsExpertSettings, local: bool) -> str:
    """The model the answers came from (``local NAME (profile P)`` with ``--local``)."""
    if local:
        return f"local {settings.llm.model} (profile {settings.evidence.profile})"
    return settings.llm.model


def ingest(args: argparse.Namespace) -> int:
    """``rags-expert ingest DIR`` before the questions (``--ingest``); 0, or 2 when it stored nothing or failed."""
    from rags_expert.cli.knowledge import cmd_ingest

    code = cmd_ingest(argparse.Namespace(**{**vars(args), "paths": [str(args.ingest)], "tags": "", "prune": False}))
    return 0 if code == 0 else 2


def gate(summary: dict[str, Any], args: argparse.Namespace) -> int:
    """1 when ``--min-right`` or ``--max-wrong`` is not met (one line each on stderr), else 0."""
    unmet = []
    right, wrong = summary["right_cited_rate"], summary["wrong_rate"]
    if args.min_right is not None and (right is None or right < args.min_right):
        unmet.append(f"right+cited {_pct(right)} of answerable questions is below --min-right {_pct(args.min_right)}")
    if args.max_wrong is not None and (wrong or 0.0) > args.max_wrong:
        unmet.append(f"wrong {_pct(wrong)} of questions is above --max-wrong {_pct(args.max_wrong)}")
    for line in unmet:
        print(f"gate not met: {line}", file=sys.stderr)
    if args.min_right is not None or args.max_wrong is not None:
        print("gate: not met" if unmet else "gate: met")
    return 1 if unmet else 0


def _pct(rate: float | None) -> str:
    """``75%`` (``–`` for none)."""
    return "–" if rate is None else f"{rate:.0%}"


def fail(message: str) -> int:
    """``error: message`` on stderr, on one line; the exit code 2."""
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return 2


def rate(text: str) -> float:
    """An argparse ``type`` for a share: ``0.8`` or ``80%``, between 0 and 1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share (0.8 or 80%)") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1 (0%..100%)")
    return value


# --- HotpotQA --------------------------------------------------------------------------------------------


async def evaluate_hotpotqa(args: argparse.Namespace) -> int:
    """Run HotpotQA through the agent and write its report."""
    from rags_expert.evaluation.hotpotqa import run_hotpotqa, write_report

    settings = cast(RagsExpertSettings, args_settings(args))  # eval builds the RAG agent's settings
    questions_file = args.data / f"{args.split}.jsonl"
    if not args.quiet:
        print(f"[indexing the {args.split} corpus, then asking; per-question lines follow]", file=sys.stderr)

    def progress(r) -> None:
        if not args.quiet:
            mark = "ok " if r.outcome == Outcome.SUCCESS else "-- "
            print(
                f"{mark} EM {r.exact_match:.0f} F1 {r.f1:.2f} calls {r.llm_calls:2d} {r.seconds:5.1f}s  "
                f"{r.question[:70]}",
                file=sys.stderr,
                flush=True,
            )

    from rags_expert.local.server import maybe_local

    async with maybe_local(settings, args.local) as local:
        await local.ready()
        report = await run_hotpotqa(
            local.settings, questions_file, split=args.split, limit=args.limit, progress=progress
        )
    json_path, png_path = write_report(report, args.out)
    print(report.table())
    print(f"\nreport: {json_path}" + (f"\nplot: {png_path}" if png_path else "\n(plot skipped: install matplotlib)"))
    return 0


def _default_hotpotqa_dir() -> Path:
    env = os.environ.get("RAGS_EXPERT_HOTPOTQA_DIR")
    return Path(env) if env else Path("..") / "shared" / "data" / "hotpotqa"


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("eval", help="evaluate the agent on your question set (JSONL, YAML, CSV) or on HotpotQA")
    p.add_argument(
        "questions",
        metavar="QUESTIONS",
        type=Path,
        help="a question file (.jsonl, .yaml, .csv: docs/evaluation.md), or hotpotqa for the built-in set",
    )
    p.add_argument("--ingest", type=Path, metavar="DIR", help="ingest DIR into the knowledge base first")
    p.add_argument("--compare", type=Path, metavar="OLD.json", help="print what changed since this earlier report")
    p.add_argument(
        "--min-right",
        type=rate,
        metavar="SHARE",
        help="exit 1 unless this share of answerable questions is right+cited (0.8, 80%%)",
    )
    p.add_argument(
        "--max-wrong",
        type=rate,
        metavar="SHARE",
        help="exit 1 when more than this share of questions is answered wrong",
    )
    p.add_argument(
        "--judge-model",
        type=setting_type("evaluation.judge_model"),
        metavar="MODEL",
        help="chat model judging answer texts (default: the answering model; RAGS_EXPERT_EVALUATION__JUDGE_MODEL)",
    )
    p.add_argument("--limit", type=positive_int, help="the first N questions only")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("eval-out"),
        help="the folder the JSON report and PNG plot go to (report.partial.json while the run goes on)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on from the partial report of an interrupted run in --out: ask only the questions it lacks",
    )
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("-k", "--top-k", type=setting_type("retrieval.top_k"), help="chunks retrieved per query")
    p.add_argument("--collection", type=setting_type("store.collection"), help="knowledge-base collection")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--local", action="store_true", help="run on the bundled offline model (needs the 'local' extra)")
    model_path_option(p)
    hotpotqa = p.add_argument_group("hotpotqa")
    hotpotqa.add_argument("--split", choices=["dev", "test"], default="dev")
    hotpotqa.add_argument(
        "--data",
        type=Path,
        default=_default_hotpotqa_dir(),
        help="folder with <split>.jsonl (default: $RAGS_EXPERT_HOTPOTQA_DIR or ../shared/data/hotpotqa)",
    )
    p.set_defaults(func=run, settings_flags=EVAL_FLAGS)
