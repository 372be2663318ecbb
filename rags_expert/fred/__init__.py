"""Our agents in Fred v2 (ThalesGroup/fred's ``fred-sdk`` / ``fred-runtime``), the host the plugin contract came from.

A Fred pod registers them like any graph agent::

    from fred_runtime.app import create_agent_app, load_agent_pod_config
    from rags_expert.fred import registry

    app = create_agent_app(registry=registry(), config=load_agent_pod_config())

Modules: :mod:`~rags_expert.fred.agents` (the ``GraphAgent`` subclasses and :func:`registry`),
:mod:`~rags_expert.fred.turn` (one turn through our graph: history, status events, the answer),
:mod:`~rags_expert.fred.search` (the retriever over Fred's document-search port, sources as Fred hits),
:mod:`~rags_expert.fred.tuning` (Fred tuning fields ↔ our prompts and settings). Needs the ``fred`` extra
(Python 3.12+): ``pip install 'rags-expert[fred]'``. See docs/hosts.md.
"""

from __future__ import annotations

from rags_expert.lazy import lazy_exports

_EXPORTS = {
    "FredDocumentSearch": "rags_expert.fred.search",
    "KGQueryFredAgent": "rags_expert.fred.agents",
    "RagsExpertFredAgent": "rags_expert.fred.agents",
    "kg_query_agent": "rags_expert.fred.agents",
    "rags_expert_agent": "rags_expert.fred.agents",
    "registry": "rags_expert.fred.agents",
}
__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = [
    "FredDocumentSearch",
    "KGQueryFredAgent",
    "RagsExpertFredAgent",
    "kg_query_agent",
    "rags_expert_agent",
    "registry",
]
