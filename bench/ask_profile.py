"""Where one offline question's time goes, by stage, through the CLI and in-process, before and after a change.

Issue 54. Each checkout (``--ref DIR``: a copy of the code before, e.g. ``git archive 0e9dea8 | tar -x -C DIR``;
and this one) answers the same questions on the same knowledge base, interleaved, in two ways:

* **cli**: ``rags-expert ask --local --json QUESTION`` as a user runs it (the ``small`` profile: no model call), one
  process per question. The process start (the interpreter's own start, until this script's first line) is the
  command's wall time less what the child measured.
* **in-process**: one agent (``RagsExpert(...).async_init()``, the settings ``ask --local`` uses), then each
  question through ``graph.ainvoke``; the first question is not counted (it loads the embedding model and reads
  the knowledge base's term frequencies, once per agent).

In the child, stage timers wrap the functions that do each stage's work (whichever of them the checkout has) and
``import``; a stage's time excludes the stages it calls (the question's embedding is not counted in the hybrid
search that asks for it). Work in worker threads is counted where it runs, so a stage that overlaps another can
make the stages add up to more than the wall time; "other" is the wall time less the stages (never below 0).

    python bench/ask_profile.py --ref /tmp/base --data /work/kb/starlette --runs 5 --out bench/results/x.json
    python bench/ask_profile.py --report bench/results/ask_profile_runs.json --record
    python bench/ask_profile.py --compare BEFORE.json AFTER.json --record   # two bench/real_docs.py --out runs

``--compare`` reads two runs of ``bench/real_docs.py --out`` (the code before and after, same questions and knowledge
bases) and tabulates, per corpus, the median and maximum seconds a question and how many questions kept their
verdict (right / wrong / honest, ...) and their answer's text.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import importlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# stage -> the functions doing its work ("module:attr" or "module:Class.attr"); a missing one is skipped
STAGES: dict[str, list[str]] = {
    "settings": [
        "rags_expert.settings.agents:RagsExpertSettings.__init__",
        "rags_expert.cli:settings_from_args",
        "rags_expert.settings.agents:AgentSettings.updated",
        "rags_expert.cli.support:args_settings",
    ],
    "local model: reserve/start": [
        "rags_expert.local.server:LocalModelServer.reserve",
        "rags_expert.local.server:LocalModelServer.spawn",
        "rags_expert.local.server:LocalModelServer.wait_ready",
    ],
    "chat model (never called)": ["rags_expert.llm.chat:build_chat_model"],
    "prompts": ["rags_expert.prompts:PromptStore.validate"],
    "store open and lock": [
        "rags_expert.retrieval.qdrant:get_store",
        "rags_expert.retrieval.qdrant:get_client",
        "rags_expert.retrieval.qdrant:KnowledgeBase.existing",
        "rags_expert.retrieval.qdrant:KnowledgeBase.check_model",
    ],
    "store close": ["rags_expert.retrieval.qdrant:close_client", "rags_expert.retrieval.qdrant:_close_all"],
    "embedding model load": ["rags_expert.retrieval.embeddings:build_embeddings"],
    "lessons": [
        "rags_expert.lessons.memory:LessonMemory.from_settings",
        "rags_expert.lessons.memory:LessonMemory.recall",
    ],
    "graph build": ["rags_expert.rag.graph:build_graph", "rags_expert.agentflow:AgentFlow.get_compiled_graph"],
    "embedding the question": ["rags_expert.retrieval.embeddings:query_vector"],
    "hybrid search": ["rags_expert.retrieval.qdrant:KnowledgeBase.search"],
    "term frequencies (once per process)": [
        "rags_expert.retrieval.qdrant:KnowledgeBase.scroll_payloads",
        "rags_expert.evidence.text:TermFrequencies.of",
    ],
    "reranking": ["rags_expert.evidence.rerank:EvidenceReranker.rerank"],
    "evidence: unit embeddings": ["rags_expert.evidence.scorer:EvidenceScorer._embed_sync"],
    "evidence: match scoring": ["rags_expert.evidence.scorer:EvidenceScorer.matches"],
    "reader: features": [
        "rags_expert.evidence.reader:candidates",
        "rags_expert.evidence.reader.features:candidates",
    ],
    "reader: model": [
        "rags_expert.evidence.reader:ReaderModel.probabilities",
        "rags_expert.evidence.reader.model:ReaderModel.probabilities",
    ],
    "support check": ["rags_expert.evidence.scorer:EvidenceScorer.support"],
}
IMPORTS = "imports"
ORDER = ["process start", IMPORTS, *STAGES]


# --- the child: timers around the stages -------------------------------------------------------------------


class Timers:
    """Exclusive seconds per stage, per thread: entering a stage pauses the one it was called from."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.local = threading.local()
        self.lock = threading.Lock()

    def _stack(self) -> list[list[Any]]:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def enter(self, stage: str) -> None:
        now = time.perf_counter()
        stack = self._stack()
        if stack:
            self._add(stack[-1][0], now - stack[-1][1])
        stack.append([stage, now])

    def leave(self) -> None:
        now = time.perf_counter()
        stack = self._stack()
        stage, began = stack.pop()
        self._add(stage, now - began)
        if stack:
            stack[-1][1] = now

    def _add(self, stage: str, seconds: float) -> None:
        with self.lock:
            self.seconds[stage] += seconds

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                # the stage's own awaits are counted while it waits on nothing else: time its synchronous steps
                coro = fn(*args, **kwargs)
                send: Any = None
                error: BaseException | None = None
                while True:
                    self.enter(stage)
                    try:
                        waited = coro.throw(error) if error is not None else coro.send(send)
                    except StopIteration as stop:
                        return stop.value
                    finally:
                        self.leave()
                    try:
                        send, error = await _Await(waited), None
                    except BaseException as exc:  # noqa: BLE001 - passed into the coroutine
                        send, error = None, exc

            timed_async.__wrapped__ = fn  # type: ignore[attr-defined]
            return timed_async

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed


class _Await:
    """Await a future a coroutine yielded, from the wrapping coroutine."""

    def __init__(self, waited: Any) -> None:
        self.waited = waited

    def __await__(self) -> Any:
        return (yield self.waited)


def install(timers: Timers) -> None:
    """Time ``import`` and patch each stage's functions as soon as their module is imported."""
    pending = [(stage, target) for stage, targets in STAGES.items() for target in targets]
    original_import = builtins.__import__
    original_import_module = importlib.import_module
    depth = threading.local()

    busy = threading.Lock()

    def patch_ready() -> None:
        if not busy.acquire(blocking=False):
            return  # a lazy attribute being read here imports: the outer call goes on
        try:
            _patch_ready()
        finally:
            busy.release()

    def _patch_ready() -> None:
        for item in list(pending):
            stage, target = item
            module_name, _, attr = target.partition(":")
            module = sys.modules.get(module_name)
            if module is None or getattr(module, "__spec__", None) is None:
                continue
            owner_path, _, name = attr.rpartition(".")
            owner: Any = module
            try:
                for part in filter(None, owner_path.split(".")):
                    owner = getattr(owner, part)
                fn = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            except (AttributeError, KeyError):
                if getattr(module, "__initializing__", False) or _initializing(module):
                    continue
                pending.remove(item)  # this checkout has no such function
                continue
            pending.remove(item)
            wrapped = _wrap_member(timers, stage, fn)
            setattr(owner, name, wrapped)
            if not isinstance(owner, type):  # from-imports of a module-level function elsewhere
                for other in list(sys.modules.values()):
                    if other is not None and other is not module and getattr(other, name, None) is fn:
                        setattr(other, name, wrapped)

    def timed(load: Callable[..., Any]) -> Callable[..., Any]:
        """``load`` (an import function) with the outermost import of a nest counted as the imports stage."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            level = getattr(depth, "n", 0)
            if level == 0:
                timers.enter(IMPORTS)
            depth.n = level + 1
            try:
                return load(*args, **kwargs)
            finally:
                depth.n = level
                if pending:
                    patch_ready()
                if level == 0:
                    timers.leave()

        return wrapper

    builtins.__import__ = timed(original_import)
    importlib.import_module = timed(original_import_module)


def _initializing(module: Any) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _wrap_member(timers: Timers, stage: str, fn: Any) -> Any:
    if isinstance(fn, staticmethod):
        return staticmethod(timers.wrap(stage, fn.__func__))
    if isinstance(fn, classmethod):
        return classmethod(timers.wrap(stage, fn.__func__))
    return timers.wrap(stage, fn)


def child(args: argparse.Namespace) -> None:
    """Answer the question(s) with the timers installed; write ``{"runs": [{stage: seconds, "wall": s}]}``."""
    began = time.perf_counter()
    timers = Timers()
    install(timers)
    runs: list[dict[str, Any]] = []
    if args.child == "cli":
        from rags_expert.cli import main as cli_main

        try:
            code = cli_main(["ask", "--local", "--json", args.question[0]])
        except SystemExit as exc:
            code = int(exc.code or 0)
        sys.stdout.flush()
        runs.append(dict(timers.seconds) | {"wall": time.perf_counter() - began, "exit": code})
    else:
        runs = asyncio.run(in_process(args.question, timers))
    Path(args.child_out).write_text(json.dumps({"runs": runs}))


async def in_process(questions: list[str], timers: Timers) -> list[dict[str, Any]]:
    """The first question warms the agent; the others are timed one by one."""
    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert
    from rags_expert.settings import RagsExpertSettings

    out = []
    async with maybe_local(RagsExpertSettings(), True, on_demand=True) as local:
        agent = await RagsExpert(local.settings, chat_model=local.chat_model()).async_init()
        try:
            graph = agent.get_compiled_graph()
            for i, question in enumerate(questions):
                timers.seconds.clear()
                began = time.perf_counter()
                state = await graph.ainvoke(
                    {"messages": [("user", question)]}, {"configurable": {"thread_id": f"t{i}"}}
                )
                wall = time.perf_counter() - began
                meta = state["messages"][-1].response_metadata
                print(json.dumps({"answer": state["messages"][-1].content, **meta}, default=str), flush=True)
                if i:
                    out.append(dict(timers.seconds) | {"wall": wall})
        finally:
            await agent.aclose()
    return out


# --- the parent: both checkouts, interleaved -----------------------------------------------------------------


def run_child(checkout: Path, mode: str, questions: list[str], data: Path, tmp: Path) -> tuple[list[dict], list[dict]]:
    """One child process on ``checkout``: its stage runs and its printed answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(checkout), "RAGS_EXPERT_DATA_DIR": str(data)}
    out = tmp / "child.json"
    command = [sys.executable, str(Path(__file__)), "--child", mode, "--child-out", str(out), "--question", *questions]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    wall = time.perf_counter() - began
    if not out.exists():
        raise SystemExit(f"{checkout} {mode} failed ({done.returncode}): {done.stderr[-2000:]}")
    runs = json.loads(out.read_text())["runs"]
    out.unlink()
    if mode == "cli":
        runs[0]["process start"] = max(0.0, wall - runs[0]["wall"])
        runs[0]["wall"] = wall
        answers = [json.loads(done.stdout)] if done.stdout.strip() else [{}]
        answers[0]["exit"] = done.returncode
    else:
        answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return runs, answers


def verdict(answer: dict[str, Any]) -> dict[str, Any]:
    """What must not change: the outcome, the answer's kind and text, the cited sources."""
    return {
        "outcome": answer.get("outcome"),
        "answer_kind": answer.get("answer_kind"),
        "answer": answer.get("answer"),
        "sources": [s.get("source") for s in answer.get("sources") or []],
    }


def checkout_commit(checkout: Path) -> str | None:
    """The short commit of a ``--ref`` checkout that is a git work tree (a ``git archive`` copy has none)."""
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def parent(args: argparse.Namespace) -> None:
    checkouts = {"before": args.ref, "after": ROOT} if args.ref else {"after": ROOT}
    questions = [json.loads(line) for line in (HERE / "real_docs" / "questions.jsonl").read_text().splitlines()]
    corpus = args.corpus or args.data.name
    asked = [q["question"] for q in questions if q["corpus"] == corpus and q["split"] == "test"][: args.questions]
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ask-profile-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    import results as bench_results

    result: dict[str, Any] = {"data": str(args.data), "questions": asked, "cli": {}, "in_process": {}, "answers": {}}
    result["before"] = checkout_commit(Path(args.ref)) if args.ref else None
    result["command"] = bench_results.command_line()
    for label in checkouts:
        result["cli"][label], result["in_process"][label], result["answers"][label] = [], [], {}
    for r in range(args.runs):
        for label, checkout in checkouts.items():
            question = asked[r % len(asked)]
            runs, answers = run_child(checkout, "cli", [question], args.data, tmp)
            result["cli"][label] += runs
            result["answers"][label].setdefault("cli", {})[question] = verdict(answers[0])
            print(f"cli {label} run {r}: {runs[0]['wall']:.2f} s", file=sys.stderr, flush=True)
    for label, checkout in checkouts.items():
        runs, answers = run_child(checkout, "in_process", [asked[-1], *asked], args.data, tmp)
        result["in_process"][label] = runs
        result["answers"][label]["in_process"] = {q: verdict(a) for q, a in zip(asked, answers[1:], strict=True)}
        print(f"in-process {label}: median {statistics.median(r['wall'] for r in runs):.3f} s", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    report(result, args.record)


def median_stages(runs: list[dict[str, Any]]) -> dict[str, float]:
    stages = {k for r in runs for k in r if k not in ("wall", "exit")}
    out = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in stages}
    out["wall"] = statistics.median(r["wall"] for r in runs)
    return out


def report(result: dict[str, Any], record: Path | None) -> None:
    sys.path.insert(0, str(HERE))
    import results as bench_results

    labels = list(result["cli"])
    changed = [
        q
        for mode in ("cli", "in_process")
        for q, v in result["answers"][labels[-1]].get(mode, {}).items()
        if len(labels) > 1 and result["answers"][labels[0]].get(mode, {}).get(q) not in (None, v)
    ]
    modes = {"cli": "`ask --local`", "in_process": "in-process"}
    med = {(mode, label): median_stages(result[mode][label]) for mode in modes for label in labels}
    rows = []
    for stage in [*ORDER, "other"]:
        cells = []
        for m in med.values():
            value = m.get(stage, 0.0)
            if stage == "other":
                value = max(0.0, m["wall"] - sum(v for k, v in m.items() if k != "wall"))
            cells.append(f"{value * 1000:.0f}")
        if any(c != "0" for c in cells):
            rows.append(f"| {stage} | " + " | ".join(cells) + " |")
    total = " | ".join(f"**{m['wall'] * 1000:.0f}**" for m in med.values())
    head = "| stage | " + " | ".join(f"{modes[mode]} {label} (ms)" for mode, label in med) + " |"
    text = "\n".join([head, "|---" * (len(med) + 1) + "|", *rows, f"| **wall (median)** | {total} |"])
    n = {mode: len(result[mode][labels[0]]) for mode in modes}
    print(f"\nmedian of {n['cli']} CLI questions and {n['in_process']} in-process questions\n\n{text}")
    bench_results.record(
        record,
        "ask_profile",
        "Where one offline question's time goes, by stage, before and after issue 54",
        text,
        command=result.get("command"),
        notes=(
            f"Median of {n['cli']} questions through the CLI (one process each) and {n['in_process']} through one "
            f"agent's `graph.ainvoke` (after a first, uncounted one), real-docs test half, one knowledge base "
            f"({Path(result['data']).name}); the code before ({result.get('before') or 'the --ref checkout'}) and "
            "after, interleaved. A stage's own time "
            "(the stages it calls excluded); worker threads counted where they run. Answers (outcome, kind, text, "
            f"sources) the same question by question: {'yes' if not changed else 'NO: ' + '; '.join(changed)}."
        ),
    )
    if changed:
        print(f"\nanswers changed: {changed}", file=sys.stderr)


def compare(before_path: Path, after_path: Path, record: Path | None, more: str = "") -> int:
    """The real-docs runs before and after side by side: seconds, and the answers question by question."""
    sys.path.insert(0, str(HERE))
    import results as bench_results

    runs = [json.loads(path.read_text()) for path in (before_path, after_path)]
    modes = {run["meta"]["mode"] for run in runs}
    if len(modes) != 1:
        raise SystemExit(f"the two runs were made in different modes ({sorted(modes)}): their seconds do not compare")
    mode = modes.pop()
    before = {r["id"]: r for r in runs[0]["results"]}
    after = {r["id"]: r for r in runs[1]["results"]}
    ids = [i for i in after if i in before]
    corpora = list(dict.fromkeys(after[i]["corpus"] for i in ids))
    lines = [
        "| corpus | questions | median s before | median s after | max s before | max s after | same verdict | "
        "same answer text |",
        "|---|---|---|---|---|---|---|---|",
    ]
    changed = []
    shown = [*corpora, "all"] if len(corpora) <= 4 else ["all"]  # many corpora: the page shows the whole set
    for corpus in [*corpora, "all"]:
        mine = [i for i in ids if corpus in ("all", after[i]["corpus"])]
        b = [before[i]["seconds"] for i in mine]
        a = [after[i]["seconds"] for i in mine]
        verdicts = sum(before[i].get("verdict") == after[i].get("verdict") for i in mine)
        texts = sum(before[i].get("answer") == after[i].get("answer") for i in mine)
        if corpus == "all":
            changed = [i for i in mine if before[i].get("answer") != after[i].get("answer")]
        row = (
            f"| {corpus} | {len(mine)} | {statistics.median(b):.2f} | {statistics.median(a):.2f} | {max(b):.2f} | "
            f"{max(a):.2f} | {verdicts}/{len(mine)} | {texts}/{len(mine)} |"
        )
        print(row)
        if corpus in shown:
            lines.append(row)
    text = "\n".join(lines)
    for i in changed:
        print(
            f"- {i}: {before[i].get('verdict')} -> {after[i].get('verdict')}\n  before: {before[i].get('answer')!r}"
            f"\n  after:  {after[i].get('answer')!r}"
        )
    commits = [run["meta"]["commit"][:7] for run in runs]
    how = "one `ask --local` process per question" if mode == "subprocess" else "in-process, one agent per corpus"
    bench_results.record(
        record,
        f"ask_local_real_docs{'' if mode == 'subprocess' else '_in_process'}",
        f"Offline answers on the real-docs test half, before and after issue 54 ({how})",
        text,
        notes=(
            f"Two runs of `bench/real_docs.py` on the test half ({len(corpora)} corpora) and the same knowledge "
            f"bases, at {commits[0]} (before) and {commits[1]} (after), one after the other. The command: `python "
            f"bench/real_docs.py --split test --corpus {' '.join(corpora)} --kb-dir DIR --out FILE"
            f"{'' if mode == 'subprocess' else ' --in-process'}`; a verdict is right+cited / wrong / partial / "
            "honest as `rags-expert eval` scores it." + (f" {more}" if more else "")
        ),
    )
    return 1 if changed else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", type=Path, help="a checkout of the code before (its root folder)")
    ap.add_argument(
        "--data", type=Path, help="an ingested knowledge base (RAGS_EXPERT_DATA_DIR); its name is the corpus"
    )
    ap.add_argument("--corpus", help="the corpus whose questions are asked (default: the --data folder's name)")
    ap.add_argument("--runs", type=int, default=5, help="CLI questions per checkout")
    ap.add_argument("--questions", type=int, default=6, help="test questions of the corpus asked")
    ap.add_argument("--out", type=Path, help="write every run here (JSON)")
    ap.add_argument("--report", type=Path, help="print (and --record) the tables of a run saved by --out")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="two real_docs.py --out runs")
    ap.add_argument("--notes", default="", help="--compare: a sentence more for the recorded table's notes")
    ap.add_argument("--child", choices=("cli", "in_process"), help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--question", nargs="+", help=argparse.SUPPRESS)
    sys.path.insert(0, str(HERE))
    import results as bench_results

    bench_results.add_option(ap)
    args = ap.parse_args()
    if args.child:
        sys.path.remove(str(HERE))
        child(args)
    elif args.compare:
        sys.exit(compare(*args.compare, args.record, args.notes))
    elif args.report:
        report(json.loads(args.report.read_text()), args.record)
    else:
        if args.data is None:
            ap.error("--data is required")
        parent(args)


if __name__ == "__main__":
    main()
