"""The corrective-RAG agent: the :class:`RagsExpert` AgentFlow, its graph and nodes (the composition), the state,
options, model profiles and node names they share, the stages in folders (``retrieve``, ``grade``, ``answer``,
``verdict``, ``wrappers``; none imports another) and the pieces two stages share in the private ``_shared``
(docs/architecture.md#the-rag-package). The exports are imported on first use (:mod:`rags_expert.lazy`), so the
command line can read :class:`~rags_expert.rag.names.Node` without the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rags_expert.lazy import lazy_exports

if TYPE_CHECKING:
    from rags_expert.rag.agent import RagsExpert, RetrieverNotConfiguredError

__getattr__ = lazy_exports(
    __name__, dict.fromkeys(["RagsExpert", "RetrieverNotConfiguredError"], f"{__name__}.agent"), globals()
)
__all__ = ["RagsExpert", "RetrieverNotConfiguredError"]
