"""Knowledge base: Qdrant hybrid retrieval, ingestion, and the knowledge-flow client."""
