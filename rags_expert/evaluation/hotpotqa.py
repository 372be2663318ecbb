"""Evaluation harness: HotpotQA questions through the real agent, scored as HotpotQA scores them.

``rags-expert eval hotpotqa --split dev [--limit N]`` builds the split's corpus (the union
of its paragraphs, one chunk per paragraph) in the knowledge base, asks every question
in a fresh thread, and reports:

* exact match and F1 with HotpotQA's official answer normalisation (lower case, no
  punctuation, no articles, single spaces; yes/no/noanswer must match exactly for F1),
  computed on the answer text with its ``[n]`` citation markers removed; since the agent
  answers in sentences, ``contains`` (the normalised gold answer appears in the answer)
  is reported beside them;
* gold-paragraph recall of the chunks the answer cited (the cited chunks' titles against
  the question's supporting-fact titles);
* outcome counts, LLM calls and latency per question.

It writes a JSON report and, when matplotlib is installed, a PNG plot.
"""

from __future__ import annotations

import json
import logging
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from rags_expert.outcomes import Outcome
from rags_expert.settings import RagsExpertSettings

log = logging.getLogger(__name__)

# --- HotpotQA's official answer metrics -------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """HotpotQA/SQuAD normalisation: lower case, drop punctuation and articles, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 as in HotpotQA's evaluation script (yes/no/noanswer only match themselves)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    special = {"yes", "no", "noanswer"}
    if (pred in special or ref in special) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def strip_citations(text: str) -> str:
    """The answer without ``[n]`` markers."""
    return re.sub(r"(?<!\s)\s*+\[\d+(?:\s*+[,;]\s*+\d+)*+\]", "", text).strip()


# --- data ----------------------------------------------------------------------------------------


def load_questions(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """A HotpotQA split file (JSONL), optionally the first ``limit`` questions."""
    if not path.is_file():
        raise FileNotFoundError(f"HotpotQA split not found: {path} (pass --data DIR)")
    questions = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return questions[:limit] if limit else questions


def write_corpus(questions: list[dict[str, Any]], path: Path) -> int:
    """The union of the questions' paragraphs as JSONL (one object per paragraph); returns the count."""
    seen: dict[str, str] = {}
    for q in questions:
        for p in q["paragraphs"]:
            seen.setdefault(p["title"], "".join(p["sentences"]).strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for title, text in seen.items():
            fh.write(json.dumps({"title": title, "content": f"{title}\n{text}"}) + "\n")
    return len(seen)


# --- running ---------------------------------------------------------------------------------------


@dataclass
class QuestionResult:
    id: str
    question: str
    gold: str
    answer: str
    outcome: str
    reason: str
    exact_match: float
    f1: float
    contains: float
    gold_recall: float
    cited_titles: list[str]
    llm_calls: int
    seconds: float


@dataclass
class EvalReport:
    split: str
    model: str
    questions: int
    exact_match: float
    f1: float
    contains: float
    gold_recall: float
    outcomes: dict[str, int]
    reasons: dict[str, int]
    llm_calls_mean: float
    llm_calls_max: int
    llm_call_bound: int
    seconds_mean: float
    seconds_p50: float
    seconds_p95: float
    results: list[QuestionResult] = field(default_factory=list)

    def table(self) -> str:
        rows = [
            ("questions", self.questions),
            ("exact match", f"{self.exact_match:.3f}"),
            ("F1", f"{self.f1:.3f}"),
            ("answer contains gold", f"{self.contains:.3f}"),
            ("gold-paragraph recall of cited chunks", f"{self.gold_recall:.3f}"),
            ("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))),
            ("failure reasons", ", ".join(f"{k} {v}" for k, v in sorted(self.reasons.items())) or "-"),
            (
                "LLM calls / question (mean, max, bound)",
                f"{self.llm_calls_mean:.1f}, {self.llm_calls_max}, {self.llm_call_bound}",
            ),
            (
                "latency s / question (mean, p50, p95)",
                f"{self.seconds_mean:.2f}, {self.seconds_p50:.2f}, {self.seconds_p95:.2f}",
            ),
        ]
        return "\n".join(["| metric | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])


def score_question(
    q: dict[str, Any], answer: str, sources: list[dict[str, Any]], *, answered: bool = True
) -> dict[str, Any]:
    """The per-question metrics of an answer and its cited sources.

    An honest failure (``answered=False``) is no answer: it scores 0 even when its text repeats the question
    ("I could not find … what Hawaii county?") or lists partial findings that hold the gold string.
    """
    text = strip_citations(answer) if answered else ""
    gold = q["answer"]
    gold_titles = {title for title, _ in q.get("supporting_facts", [])}
    cited = sorted({str(s.get("title")) for s in sources if s.get("title")})
    return {
        "exact_match": exact_match(text, gold),
        "f1": f1_score(text, gold),
        "contains": float(
            bool(normalize_answer(gold)) and f" {normalize_answer(gold)} " in f" {normalize_answer(text)} "
        ),
        "gold_recall": len(gold_titles & set(cited)) / len(gold_titles) if gold_titles else 0.0,
        "cited_titles": cited,
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


async def run_hotpotqa(
    settings: RagsExpertSettings,
    questions_file: Path,
    *,
    split: str,
    limit: int | None = None,
    chat_model: BaseChatModel | None = None,
    progress: Callable[[QuestionResult], None] | None = None,
) -> EvalReport:
    """Ingest the split's corpus (idempotent), ask every question, score the answers."""
    from rags_expert.rag import RagsExpert
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase

    all_questions = load_questions(questions_file)
    questions = all_questions[:limit] if limit else all_questions
    store = settings.store.model_copy(update={"collection": f"hotpotqa_{split}"})
    ingestion = settings.ingestion.model_copy(update={"chunk_size": 20000, "chunk_overlap": 0})
    settings = settings.model_copy(update={"store": store, "ingestion": ingestion})
    corpus = Path(store.data_dir) / "eval" / f"hotpotqa-{split}.jsonl"
    count = write_corpus(all_questions, corpus)  # the whole split's paragraphs, also with --limit
    log.info("indexing %d %s paragraphs into %r (unchanged paragraphs are skipped)", count, split, store.collection)
    Ingestor(KnowledgeBase(settings)).run([corpus])

    agent = await RagsExpert(settings, chat_model=chat_model).async_init()
    graph = agent.get_compiled_graph()
    results: list[QuestionResult] = []
    for q in questions:
        started = time.perf_counter()
        out = await graph.ainvoke(
            {"messages": [HumanMessage(q["question"])]}, {"configurable": {"thread_id": f"eval-{split}-{q['id']}"}}
        )
        seconds = time.perf_counter() - started
        final = out["messages"][-1]
        meta = final.response_metadata
        answered = meta.get("outcome") == Outcome.SUCCESS
        metrics = score_question(q, str(final.content), meta.get("sources", []), answered=answered)
        result = QuestionResult(
            id=q["id"],
            question=q["question"],
            gold=q["answer"],
            answer=str(final.content),
            outcome=meta.get("outcome", Outcome.FAILURE.value),
            reason=meta.get("reason", ""),
            llm_calls=int(meta.get("llm_calls", 0)),
            seconds=seconds,
            **metrics,
        )
        results.append(result)
        if progress:
            progress(result)
    n = len(results) or 1
    seconds_all = [r.seconds for r in results]
    return EvalReport(
        split=split,
        model=settings.llm.model if chat_model is None else type(chat_model).__name__,
        questions=len(results),
        exact_match=sum(r.exact_match for r in results) / n,
        f1=sum(r.f1 for r in results) / n,
        contains=sum(r.contains for r in results) / n,
        gold_recall=sum(r.gold_recall for r in results) / n,
        outcomes=dict(Counter(r.outcome for r in results)),
        reasons=dict(Counter(r.reason for r in results if r.outcome != Outcome.SUCCESS)),
        llm_calls_mean=sum(r.llm_calls for r in results) / n,
        llm_calls_max=max((r.llm_calls for r in results), default=0),
        llm_call_bound=settings.budgeted_call_bound(with_history=False),
        seconds_mean=statistics.fmean(seconds_all) if seconds_all else 0.0,
        seconds_p50=_pct(seconds_all, 0.5),
        seconds_p95=_pct(seconds_all, 0.95),
        results=results,
    )


def write_report(report: EvalReport, out_dir: Path) -> tuple[Path, Path | None]:
    """Write ``<out>/hotpotqa-<split>.json`` and, with matplotlib, ``.png``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"hotpotqa-{report.split}.json"
    json_path.write_text(json.dumps(asdict(report), indent=2, ensure_ascii=False), encoding="utf-8")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return json_path, None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = ["EM", "F1", "contains", "gold recall"]
    ax1.bar(names, [report.exact_match, report.f1, report.contains, report.gold_recall], color="#4c72b0")
    ax1.set_ylim(0, 1)
    ax1.set_title(f"HotpotQA {report.split} ({report.questions} q, {report.model})")
    ax2.scatter(
        [r.llm_calls for r in report.results],
        [r.seconds for r in report.results],
        c=["#55a868" if r.outcome == Outcome.SUCCESS else "#c44e52" for r in report.results],
    )
    ax2.set_xlabel("LLM calls")
    ax2.set_ylabel("seconds")
    ax2.set_title("per question (green: success, red: failure)")
    fig.tight_layout()
    png_path = out_dir / f"hotpotqa-{report.split}.png"
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return json_path, png_path
