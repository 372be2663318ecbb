"""The rerankers of the reranking stage (:mod:`rags_expert.rag.retrieve.reranking`, ``rerank.*``; docs/retrieval.md#reranking).

:mod:`.base` (the :class:`~.base.Reranker` protocol), :mod:`.evidence` (model-free), :mod:`.http_api` (the Cohere
and text-embeddings-inference ``/rerank`` APIs), :mod:`.compressor` (any LangChain document compressor),
:mod:`.knowledge_flow` (knowledge-flow's ``/vector/rerank``).
"""
