"""The corrective-RAG agent: the :class:`RagsExpert` AgentFlow, its graph, nodes, state, options and model
profiles at the top, the stages in folders (``retrieve``, ``grade``, ``answer``, ``verdict``) and what wraps every
node in ``wrappers`` (docs/architecture.md#the-rag-package). The exports are imported on first use
(:mod:`rags_expert.lazy`), so the command line can read :class:`~rags_expert.rag.names.Node` without the agent.

Deprecated paths: the modules of the former flat layout still import from their old names
(``rags_expert.citations`` …, listed in :data:`MOVED`), with a :class:`DeprecationWarning`; each is the same
module object as at its new path.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rags_expert.lazy import lazy_exports

if TYPE_CHECKING:
    from rags_expert.rag.agent import RagsExpert, RetrieverNotConfiguredError

__getattr__ = lazy_exports(
    __name__, dict.fromkeys(["RagsExpert", "RetrieverNotConfiguredError"], f"{__name__}.agent"), globals()
)
__all__ = ["RagsExpert", "RetrieverNotConfiguredError"]

MOVED = {
    "authorization": "wrappers.authorization",
    "bridge": "retrieve.bridge",
    "citations": "answer.citations",
    "failsafe": "wrappers.failsafe",
    "fallback": "retrieve.fallback_source",
    "final": "answer.final",
    "guard": "wrappers.guard",
    "hops": "retrieve.hops",
    "refinement": "grade.refinement",
    "relevance": "grade.relevance",
    "reranking": "retrieve.reranking",
    "spans": "answer.spans",
    "speculation": "answer.speculation",
    "verified": "verdict.verified",
}
"""Former module (``rags_expert.rag.<key>``) → where it lives now (``rags_expert.rag.<value>``)."""


class _MovedModules(MetaPathFinder, Loader):
    """Imports a former path as the module at its new one (asked only after the real files were not found)."""

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> ModuleSpec | None:
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in MOVED:
            return None
        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}"
        warnings.warn(f"{spec.name} is deprecated: import {new}", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system sets the alias spec on the module: restored below
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state if module.__spec__ else None


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
