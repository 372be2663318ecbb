"""The corrective-RAG agent: state, nodes, graph, citations and the :class:`RagsExpert` AgentFlow."""

from rags_expert.rag.agent import RagsExpert, RetrieverNotConfiguredError

__all__ = ["RagsExpert", "RetrieverNotConfiguredError"]
