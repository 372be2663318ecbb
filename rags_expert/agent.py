"""Compatibility path: ``rags_expert.agent:RagsExpert`` (host YAML files, older entry points).

The host contract lives in :mod:`rags_expert.host`, the RAG agent in :mod:`rags_expert.rag`.
"""

from rags_expert.host import AgentFlow, NotInitializedError
from rags_expert.rag.agent import RagsExpert, RetrieverNotConfiguredError

__all__ = ["AgentFlow", "NotInitializedError", "RagsExpert", "RetrieverNotConfiguredError"]
