"""rags-expert: corrective-RAG and KG-query reflexion agents for LangGraph hosts.

```python
from rags_expert import RagsExpert
agent = await RagsExpert().async_init()
graph = agent.get_compiled_graph()
```
"""

from rags_expert.host import AgentFlow, NotInitializedError
from rags_expert.prompts import PromptError, PromptStore
from rags_expert.rag import RagsExpert, RetrieverNotConfiguredError
from rags_expert.settings import RagsExpertSettings

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
