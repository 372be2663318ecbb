"""tests/helpers/slow_guard.py: a test that starts a process without ``pytest.mark.slow`` fails, naming the program.

The inner runs raise the audit event a process start raises (``subprocess.Popen``) instead of starting one, so that
this check itself stays in the fast loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest

SPAWN = 'sys.audit("subprocess.Popen", "/bin/true", ["/bin/true", "--flag"], None, {"OPENAI_API_KEY": "sk-hidden"})'
INI = "[pytest]\nmarkers =\n    slow: starts a process\n"


@pytest.fixture
def run_inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], pytest.RunResult]:
    """Runs a test module made of a body under the guard alone (no other plugin: a quick inner run), in this
    process."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini(INI)

    def run(body: str) -> pytest.RunResult:
        pytester.makepyfile(f"import sys\n\nimport pytest\n\n{body}")
        return pytester.runpytest_inprocess("-p", "helpers.slow_guard", "-q", "-p", "no:cacheprovider")

    return run


def test_an_unmarked_test_that_starts_a_process_fails_naming_the_program(run_inner):
    result = run_inner(f"def test_spawns():\n    {SPAWN}\n")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_spawns starts a process (/bin/true --flag) but is not marked slow*"])
    assert "sk-hidden" not in result.stdout.str()


def test_a_test_marked_slow_may_start_processes(run_inner):
    result = run_inner(f"@pytest.mark.slow\ndef test_spawns():\n    {SPAWN}\n")
    result.assert_outcomes(passed=1)


def test_a_module_marked_slow_may_start_processes(run_inner):
    result = run_inner(f"pytestmark = pytest.mark.slow\n\n\ndef test_spawns():\n    {SPAWN}\n")
    result.assert_outcomes(passed=1)


def test_a_function_scoped_fixture_counts_as_the_test(run_inner):
    body = f"@pytest.fixture\ndef server():\n    {SPAWN}\n\n\ndef test_uses_it(server):\n    pass\n"
    result = run_inner(body)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_uses_it starts a process (/bin/true --flag) but is not marked slow*"])


def test_a_server_shared_by_a_session_fixture_is_not_the_tests_cost(run_inner):
    body = f'@pytest.fixture(scope="session")\ndef server():\n    {SPAWN}\n\n\ndef test_uses_it(server):\n    pass\n'
    result = run_inner(body)
    result.assert_outcomes(passed=1)


def test_a_test_that_starts_nothing_passes_unmarked(run_inner):
    result = run_inner("def test_quiet():\n    assert sys.audit is not None\n")
    result.assert_outcomes(passed=1)
