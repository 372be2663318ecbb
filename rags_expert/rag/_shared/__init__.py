"""Private to :mod:`rags_expert.rag`: what more than one stage folder reads (no public API, no stability promise).

The stage folders (``retrieve``, ``grade``, ``answer``, ``verdict``, ``wrappers``) import no other stage folder
(``tests/test_layout.py``); a piece two stages need lives here, below them, beside ``state``, ``profiles``,
``options`` and ``names``. What every agent shares (chunk ids and citations, the failure path) lives at the
package root (:mod:`rags_expert.citations`, :mod:`rags_expert.failsafe`).
"""
