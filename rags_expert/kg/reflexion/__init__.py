"""The reflexion loop: the generic LangGraph base and the Cypher-writing agent built on it.

* :mod:`~rags_expert.kg.reflexion.base` – :class:`ReflexionAgent`: the graph, its ``Literal`` routers, the step
  count and limit, failure handling, the hooks;
* :mod:`~rags_expert.kg.state` – :class:`ReflexionState`, its defaults (:data:`STATE_DEFAULTS`) and
  :func:`state_value`, the one way to read a state key;
* ``_seed_hooks`` – the defaults of the base's hooks that call BioChatter's seed-named hooks;
* :mod:`~rags_expert.kg.cypher_agent` – :class:`KGQueryReflexionAgent`, composed of:
  ``_prompting`` (what the model is told), :mod:`~rags_expert.kg.replies` (reply schemas, reading a
  query from a reply), and ``_scoring`` (score an attempt, learn a lesson).

``rags_expert.kg.reflexion.ReflexionAgent`` and ``ReflexionState`` keep working here (they lived in the
former module ``rags_expert.kg.reflexion``, now :mod:`~rags_expert.kg.reflexion.base` and ``.state``).
"""

from rags_expert.kg.reflexion.base import ReflexionAgent
from rags_expert.kg.state import STATE_DEFAULTS, ReflexionState, question_of, state_value

__all__ = ["STATE_DEFAULTS", "ReflexionAgent", "ReflexionState", "question_of", "state_value"]
