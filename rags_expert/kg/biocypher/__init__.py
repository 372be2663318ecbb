"""The BioCypher side: the schema the prompts are made from, and the shipped sample graph.

* :mod:`~rags_expert.kg.biocypher.schema` – :class:`KGSchema`, :func:`load_schema`, the schema prompt;
* :mod:`~rags_expert.kg.biocypher.loader` – :func:`load_sample_graph` writes ``sample_kg.yaml`` into a backend.
"""
