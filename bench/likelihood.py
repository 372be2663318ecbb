"""Log-likelihoods from the local llama.cpp server: ``log P(text | context)`` for several candidates.

llama.cpp's server has no prompt log-probabilities (``echo`` is refused: "Only no echo is supported"), so the
text is *forced* as the completion: ``POST /tokenize`` gives its token ids, a GBNF grammar of those ids
(``root ::= <[1812]> <[314]> …``, token matching by id) allows exactly them, and ``n_probs: 1`` with
``post_sampling_probs: false`` returns each token's ``logprob`` from the model's own softmax over the whole
vocabulary before any sampler (the grammar included) touched it. Their sum is ``log P(text | context)`` under the
tokenizer's split. The end-of-text token the grammar ends with is not counted.

A grammar of the *string* (``root ::= "…"``) was tried first and dropped: greedy decoding under it picks whichever
allowed piece the model likes best, and strays into odd splits (``" "`` + ``"max"`` for ``" max"``, ``"C"`` + ``"ORS"``
…) whose tokens the model finds unlikely: −100 instead of −40 for the same question.

Several candidates go in one ``POST /completion`` with ``prompt`` as a list (one result per prompt, in order;
``cache_prompt`` lets a slot reuse the prefix it read last). A server started with several slots (``--parallel``)
decodes the list's prompts side by side in one batch, which is where the time goes on a CPU: a 135M model's
decode step costs nearly the same for 1 token as for 8.

Used by the answer selector's features (question likelihood ``log P(q | unit)``, UPR; answer PMI
``log P(s | q, p) - log P(s | p)``), :mod:`bench.reader_signals` measures them.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Raw-text prompts (the instruct model also reads them without its chat template).
QUESTION_PROMPT = "Passage: {passage}\nA question this passage answers:"
"""UPR's prompt: the question is read after the passage (Sachan et al. 2022, "Please write a question based on
this passage")."""
SENTENCE_PROMPT = "{context}\nQuestion: {question}\nAnswer:"
SENTENCE_PRIOR_PROMPT = "{context}\nAnswer:"


def gbnf_tokens(ids: Sequence[int]) -> str:
    """A GBNF grammar allowing exactly the token ids ``ids`` (llama.cpp's ``<[id]>`` token terminals)."""
    return "root ::= " + " ".join(f"<[{i}]>" for i in ids)


@dataclass
class Scored:
    """The log-likelihood of one forced text."""

    logprob: float
    tokens: int

    @property
    def mean(self) -> float:
        """Per-token log-likelihood (0 for no token)."""
        return self.logprob / self.tokens if self.tokens else 0.0


@dataclass
class LikelihoodScorer:
    """Scores forced continuations on a llama.cpp server (``base_url`` without ``/v1``)."""

    base_url: str
    timeout: float = 120.0
    max_tokens: int = 96
    """Forced tokens at most per text (a longer text is cut: its tail is not scored)."""
    batch: int = 16
    """Prompts per request."""
    requests: int = field(default=0, init=False)
    _ids: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)
    seconds: float = field(default=0.0, init=False)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - the loopback server we started
            self.base_url.rstrip("/").removesuffix("/v1") + path, data, {"Content-Type": "application/json"}
        )
        began = time.monotonic()
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
            out = json.loads(response.read())
        self.requests += 1
        self.seconds += time.monotonic() - began
        return out

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[Scored]:
        """``log P(text | prompt)`` for each ``(prompt, text)``, in order. Pairs sharing a text share a grammar:
        one request holds prompts of one grammar (the grammar is per request)."""
        out: list[Scored | None] = [None] * len(pairs)
        by_text: dict[str, list[int]] = {}
        for i, (_, text) in enumerate(pairs):
            by_text.setdefault(text, []).append(i)
        for text, indices in by_text.items():
            for start in range(0, len(indices), self.batch):
                chunk = indices[start : start + self.batch]
                for i, result in zip(chunk, self._forced([pairs[i][0] for i in chunk], text), strict=True):
                    out[i] = result
        return [s if s is not None else Scored(0.0, 0) for s in out]

    def tokenize(self, text: str) -> list[int]:
        """The server's token ids of ``text`` (no BOS), cut to ``max_tokens``."""
        reply = self._post("/tokenize", {"content": text})
        assert isinstance(reply, dict)
        return [int(t) for t in reply["tokens"]][: self.max_tokens]

    def _forced(self, prompts: list[str], text: str) -> list[Scored]:
        ids = self._ids.get(text)
        if ids is None:
            ids = self._ids[text] = self.tokenize(text)
        if not ids:
            return [Scored(0.0, 0) for _ in prompts]
        body = {
            "prompt": prompts if len(prompts) > 1 else prompts[0],
            "grammar": gbnf_tokens(ids),
            "n_predict": len(ids),
            "temperature": 0.0,
            "n_probs": 1,
            "post_sampling_probs": False,
            "cache_prompt": True,
            "stream": False,
        }
        reply = self._post("/completion", body)
        results: list[dict[str, Any]] = reply if isinstance(reply, list) else [reply]
        if len(results) != len(prompts):
            raise RuntimeError(f"the server answered {len(results)} results for {len(prompts)} prompts")
        return [_scored(r, len(ids)) for r in results]


def _scored(result: dict[str, Any], n: int) -> Scored:
    """The sum of the first ``n`` forced tokens' log-probabilities (the end-of-text token is left out)."""
    probs = (result.get("completion_probabilities") or [])[:n]
    if len(probs) < n:
        raise RuntimeError(f"the server forced {len(probs)} of {n} tokens")
    return Scored(sum(float(p.get("logprob", 0.0)) for p in probs), n)
