"""The answer judge: a chat model asked whether an answer states the expected fact (prompt ``judge_answer``).

Used for questions that give an ``answer`` text and no ``patterns``, when a capable chat model is configured
(not ``--local``). A judge that fails (an HTTP error, a timeout) or answers anything but a readable
``{"same": true|false}`` gives ``None``: the question is *unjudged*, never counted right.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from rags_expert.llm.parsing import coerce_bool, extract_json_object
from rags_expert.prompts import PromptStore, neutralise
from rags_expert.secrets import redact
from rags_expert.settings import RagsExpertSettings

log = logging.getLogger(__name__)


@dataclass
class Judge:
    """A chat model that says whether an answer states the expected fact; it counts its calls and faults."""

    settings: RagsExpertSettings
    model_name: str
    calls: int = 0
    faults: list[str] = field(default_factory=list)

    @classmethod
    def from_settings(cls, settings: RagsExpertSettings, model: str | None = None) -> Judge:
        """The judge of ``settings`` (``evaluation.judge_model``, else ``llm.model``), or ``model`` if given."""
        return cls(settings, model or settings.evaluation.judge_model or settings.llm.model)

    @property
    def label(self) -> str:
        """How the report names this judge: ``model judge (NAME)``."""
        return f"model judge ({self.model_name})"

    async def same_fact(self, question: str, expected: str, answer: str) -> bool | None:
        """Whether ``answer`` states the fact of ``expected``; None when the judge failed or said nothing readable."""
        from langchain_core.messages import HumanMessage

        from rags_expert.llm.chat import build_chat_model, message_text

        prompts = PromptStore(self.settings.prompts, self.settings.prompt_dir)
        text = prompts.render(
            "judge_answer", question=neutralise(question), expected=neutralise(expected), answer=neutralise(answer)
        )
        llm = self.settings.llm.model_copy(update={"model": self.model_name})
        self.calls += 1
        try:
            model = build_chat_model(llm, client_timeout=self.settings.evaluation.judge_timeout)
            reply = await asyncio.wait_for(
                model.ainvoke([HumanMessage(text)]), timeout=self.settings.evaluation.judge_timeout
            )
        except Exception as exc:  # noqa: BLE001 - any fault leaves the question unjudged
            key = self.settings.llm.api_key
            secrets = [key.get_secret_value()] if key is not None else []
            self.faults.append(" ".join(redact(self.fault(exc), secrets).split())[:300])
            log.warning("the judge failed: %s", self.faults[-1])
            return None
        verdict = read_verdict(message_text(reply))
        if verdict is None:
            self.faults.append("unreadable reply: " + " ".join(message_text(reply).split())[:200])
        return verdict

    def fault(self, exc: Exception) -> str:
        """``ErrorClass: what went wrong``, never an empty reason (``asyncio.wait_for``'s TimeoutError has none)."""
        detail = str(exc).strip() or str(exc.__cause__ or "").strip()
        if not detail and isinstance(exc, TimeoutError):
            detail = f"no reply within {self.settings.evaluation.judge_timeout:g} s (evaluation.judge_timeout)"
        return f"{type(exc).__name__}: {detail or 'failed without a message'}"

    def summary(self) -> dict[str, object]:
        """What ``report.json``'s ``meta.judge`` says: the model, its calls, and why questions went unjudged."""
        return {"model": self.model_name, "calls": self.calls, "faults": self.faults[:50]}


def read_verdict(text: str) -> bool | None:
    """``{"same": true}`` -> True, ``{"same": false}`` -> False; anything else -> None (unjudged)."""
    obj = extract_json_object(text)
    if not obj or "same" not in obj:
        return None
    return coerce_bool(obj["same"])
