"""rags-expert: corrective-RAG and KG-query reflexion agents for LangGraph hosts.

```python
from rags_expert import RagsExpert
agent = await RagsExpert().async_init()
graph = agent.get_compiled_graph()
```

The exports are imported on first use (:mod:`rags_expert.lazy`), so the command line starts fast.
"""

from typing import TYPE_CHECKING

from rags_expert.lazy import lazy_exports

if TYPE_CHECKING:
    from rags_expert.agentflow import AgentFlow, NotInitializedError
    from rags_expert.prompts import PromptError, PromptStore
    from rags_expert.rag import RagsExpert, RetrieverNotConfiguredError
    from rags_expert.settings import RagsExpertSettings

_EXPORTS = {
    "AgentFlow": "rags_expert.agentflow",
    "NotInitializedError": "rags_expert.agentflow",
    "PromptError": "rags_expert.prompts",
    "PromptStore": "rags_expert.prompts",
    "RagsExpert": "rags_expert.rag.agent",
    "RetrieverNotConfiguredError": "rags_expert.rag.agent",
    "RagsExpertSettings": "rags_expert.settings",
}
__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = [
    "AgentFlow",
    "NotInitializedError",
    "PromptError",
    "PromptStore",
    "RagsExpert",
    "RagsExpertSettings",
    "RetrieverNotConfiguredError",
]
__version__ = "0.1.0"
