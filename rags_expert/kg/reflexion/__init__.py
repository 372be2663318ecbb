"""The reflexion loop: the generic LangGraph base and the Cypher-writing agent built on it.

* :mod:`~rags_expert.kg.reflexion.base` – :class:`ReflexionAgent`, :class:`ReflexionState`, the state's
  defaults and :func:`state_value`, the one way to read a state key;
* ``_seed_hooks`` – the defaults of the base's hooks that call BioChatter's seed-named hooks;
* :mod:`~rags_expert.kg.reflexion.cypher_agent` – :class:`KGQueryReflexionAgent`, composed of:
  ``_prompting`` (what the model is told), :mod:`~rags_expert.kg.reflexion.replies` (reply schemas, reading a
  query from a reply), ``_scoring`` (score an attempt, learn a lesson) and ``_answer`` (the user-facing message).

``rags_expert.kg.reflexion.ReflexionAgent`` and ``ReflexionState`` keep working here (they lived in the
former module ``rags_expert.kg.reflexion``, now :mod:`~rags_expert.kg.reflexion.base`).
"""

from rags_expert.kg.reflexion.base import ReflexionAgent, ReflexionState, question_of

__all__ = ["ReflexionAgent", "ReflexionState", "question_of"]
