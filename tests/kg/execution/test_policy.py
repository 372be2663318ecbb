"""The KG loop's exit rules and which executed query becomes the result."""

from __future__ import annotations

from rags_expert.kg.execution._policy import choose_attempt, exit_rule
from rags_expert.settings import KGSettings


def _attempt(step, score=None, rows=(), error=None):
    return {
        "step": step,
        "query": f"MATCH (n) RETURN n LIMIT {step}",
        "score": score,
        "rows": list(rows),
        "error": error,
    }


def test_the_loop_stops_on_a_good_score_or_on_rows_when_asked():
    kg = KGSettings(score_threshold=7.0, stop_on_nonempty=False)
    assert exit_rule([], kg) is None
    assert exit_rule([_attempt(1)], kg) is None  # not scored yet
    assert exit_rule([_attempt(1, score=7.0)], kg) == "score"
    assert exit_rule([_attempt(1, score=3.0, rows=[{"n": 1}])], kg) is None
    eager = KGSettings(score_threshold=7.0, stop_on_nonempty=True)
    assert exit_rule([_attempt(1, score=3.0, rows=[{"n": 1}])], eager) == "non_empty"
    assert exit_rule([_attempt(1, score=3.0, rows=[{"n": 1}], error="boom")], eager) is None


def test_a_stop_on_success_takes_the_latest_query_else_the_best_that_ran():
    first, second, third = _attempt(1, 6.0, rows=[{"n": 1}]), _attempt(2, 9.0), _attempt(3, 8.0)
    assert choose_attempt([first, second, third], "score") is third  # the loop stopped on it
    assert choose_attempt([first, second, third], "max_steps") is first  # rows beat a higher score
    assert choose_attempt([_attempt(1, 2.0), _attempt(2, 5.0)], "max_steps")["step"] == 2
    assert choose_attempt([_attempt(1, error="syntax")], "max_steps") is None  # none ran
