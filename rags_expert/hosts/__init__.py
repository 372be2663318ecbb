"""How hosts load and drive the agents: a YAML list or entry points (:mod:`~rags_expert.hosts.loading`), LangGraph
Server's graph factories (:mod:`~rags_expert.hosts.langgraph_server`), the progress lines a user is shown
(:mod:`~rags_expert.hosts.progress`) and the MCP server (:mod:`rags_expert.hosts.mcp`). Fred's host is
:mod:`rags_expert.fred`."""
