"""Deprecated path: the Cypher agent lives in :mod:`rags_expert.kg.reflexion.cypher_agent`.

Kept so that the names earlier docs and hosts imported from ``rags_expert.kg.cypher_agent`` still import
from here; new code imports them from :mod:`rags_expert.kg` (or :mod:`rags_expert.kg.reflexion.replies`
for the reply schemas).
"""

from rags_expert.kg.reflexion.cypher_agent import *  # noqa: F403 - the names the old module had, one list of them
from rags_expert.kg.reflexion.cypher_agent import __all__  # noqa: F401
