"""rags-expert: corrective-RAG and KG-query reflexion agents for LangGraph hosts."""
