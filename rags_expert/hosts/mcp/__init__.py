"""``rags-expert mcp``: the agents as MCP tools (the ``mcp`` extra). :mod:`~rags_expert.hosts.mcp.server` serves
:mod:`~rags_expert.hosts.mcp.tools` over stdio or HTTP; :mod:`~rags_expert.hosts.mcp.http` decides who may call it;
:mod:`~rags_expert.hosts.mcp.jsonrpc` answers messages that are not valid JSON-RPC."""
