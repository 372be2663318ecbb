"""Finding chunks: reranking what the retriever returns, the fallback source, multi-hop follow-up searches (and
the bridge entities they look for), and the lessons recalled beside the search."""
