"""The shared wait strategy (:class:`rags_expert.llm.backoff.wait_backoff`) inside real tenacity loops."""

from __future__ import annotations

import pytest
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from rags_expert.llm.backoff import retry_after_seconds, wait_backoff


class Refused(Exception):
    """A failure carrying a response with headers, like the OpenAI SDK's errors."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("refused")
        self.response = type("Response", (), {"headers": headers})()


def waits_of(wait: wait_backoff, failures: list[Exception]) -> list[float]:
    """The waits a tenacity loop sleeps while ``failures`` are raised in turn (then a success)."""
    slept: list[float] = []
    queue = list(failures)

    def attempt() -> str:
        if queue:
            raise queue.pop(0)
        return "ok"

    retrying = Retrying(
        wait=wait, stop=stop_after_attempt(10), retry=retry_if_exception_type(Refused), sleep=slept.append
    )
    assert retrying(attempt) == "ok"
    return slept


def test_exponential_capped_without_jitter():
    assert waits_of(wait_backoff(0.5, 2.0, jitter=False), [Refused({})] * 4) == [0.5, 1.0, 2.0, 2.0]


def test_jitter_stays_between_half_and_the_full_wait():
    waits = waits_of(wait_backoff(1.0, 4.0), [Refused({})] * 4)
    for wait, full in zip(waits, [1.0, 2.0, 4.0, 4.0], strict=True):
        assert full / 2 <= wait <= full


def test_retry_after_wins_and_is_capped():
    failures = [Refused({"retry-after": "3"}), Refused({"retry-after-ms": "250"}), Refused({"retry-after": "60"})]
    assert waits_of(wait_backoff(0.1, 10.0, jitter=False), failures) == [3.0, 0.25, 10.0]


@pytest.mark.parametrize("headers", [{}, {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, {"retry-after": "-1"}])
def test_unusable_retry_after_falls_back_to_backoff(headers):
    assert retry_after_seconds(Refused(headers)) is None
    assert waits_of(wait_backoff(0.2, 1.0, jitter=False), [Refused(headers)]) == [0.2]
