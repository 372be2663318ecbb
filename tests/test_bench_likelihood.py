"""The likelihood scorer of bench/likelihood.py (research only: the agent does not use it): forced token-id grammars
on llama.cpp's /completion (offline parts, then the real server)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from rags_expert.local.server import LocalModelServer, local_extra_installed
from rags_expert.settings import LocalModelSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from likelihood import QUESTION_PROMPT, LikelihoodScorer, Scored, _scored, gbnf_tokens  # noqa: E402


def test_the_grammar_allows_exactly_the_token_ids():
    assert gbnf_tokens([1812, 314, 47]) == "root ::= <[1812]> <[314]> <[47]>"


def test_the_end_of_text_token_after_the_forced_ones_is_not_counted():
    result = {
        "completion_probabilities": [
            {"token": " a", "logprob": -1.0},
            {"token": "b", "logprob": -0.5},
            {"token": "", "logprob": -3.0},
        ]
    }
    assert _scored(result, 2) == Scored(-1.5, 2)


def test_a_reply_with_fewer_tokens_than_forced_is_an_error_not_a_score():
    with pytest.raises(RuntimeError, match="1 of 2"):
        _scored({"completion_probabilities": [{"token": "a", "logprob": -1.0}]}, 2)


class _Fake(LikelihoodScorer):
    """Answers /tokenize with one id per character and /completion with -1 per forced token and prompt."""

    def _post(self, path, body):
        self.requests += 1
        if path == "/tokenize":
            return {"tokens": list(range(len(body["content"])))}
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        n = body["n_predict"]
        return [{"completion_probabilities": [{"token": "x", "logprob": -len(p)}] * (n + 1)} for p in prompts]


def test_prompts_of_one_text_share_requests_and_results_keep_their_order():
    scorer = _Fake("http://x", batch=2)
    out = scorer.score([("aa", "qq"), ("a", "qq"), ("aaa", "qq"), ("a", "zzz")])
    assert [s.logprob for s in out] == [-4, -2, -6, -3]
    # two tokenizations, then "qq": two requests of two and one; "zzz": one
    assert scorer.requests == 2 + 2 + 1


@pytest.mark.slow
@pytest.mark.local
@pytest.mark.skipif(not local_extra_installed(), reason="the 'local' extra or the model is not installed")
def test_on_the_real_server_the_passage_that_states_it_makes_the_question_likelier():
    settings = LocalModelSettings().model_copy(update={"threads": 1, "threads_batch": 1})
    with LocalModelServer(settings) as server:
        scorer = LikelihoodScorer(server.base_url)
        question = " What is the default max_age of CORSMiddleware?"
        passages = [
            "max_age - Sets a maximum time in seconds for browsers to cache CORS responses. Defaults to 600.",
            "Background tasks run after the response has been sent.",
        ]
        right, other = scorer.score([(QUESTION_PROMPT.format(passage=p), question) for p in passages])
        assert right.tokens == other.tokens > 5
        assert math.isfinite(right.logprob) and right.logprob > other.logprob
        assert scorer.requests == 2  # one /tokenize, one /completion holding both prompts
