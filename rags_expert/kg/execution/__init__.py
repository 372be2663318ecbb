"""Running a query and what comes of it.

* :mod:`~rags_expert.kg.execution.run` – the action as a tool call, the read-only run, the attempt record;
* :mod:`~rags_expert.kg.execution.safety` – the write pre-check (a reflection for the model, not the guarantee);
* ``_policy`` – the exit rules and which executed query becomes the result;
* :mod:`~rags_expert.kg.execution.result` – :class:`KGState` and its defaults, the step log records, :class:`KGQueryResult`;
* ``_answer`` – the user-facing answer message made from the result.
"""
