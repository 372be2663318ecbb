"""The corrective-RAG agent: state, nodes, graph, citations and the :class:`RagsExpert` AgentFlow.

The agent is imported on first use (:mod:`rags_expert.lazy`): ``rags_expert.rag.cli`` stays light.
"""

from typing import TYPE_CHECKING

from rags_expert.lazy import lazy_exports

if TYPE_CHECKING:
    from rags_expert.rag.agent import RagsExpert, RetrieverNotConfiguredError

_EXPORTS = {"RagsExpert": "rags_expert.rag.agent", "RetrieverNotConfiguredError": "rags_expert.rag.agent"}
__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = [
    "RagsExpert",
    "RetrieverNotConfiguredError",
]
