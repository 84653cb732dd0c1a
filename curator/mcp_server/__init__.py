"""``curator mcp``: the curator as a memory server for any Model Context Protocol client.

Built on the official Python SDK (``mcp``) and on :mod:`curator.api`, so an agent on MCP
can do exactly what the Python API allows and nothing more: read committed Knowledge and
record pending Episodes, which a person still classifies, reviews and commits. See
:mod:`curator.mcp_server.server` for the tools and resources, :mod:`.ratelimit` for the
per-client limit on writes, :mod:`.writer` for the group commit of the episodes recorded
at the same time, and :mod:`.http` for the streamable HTTP transport and its bearer token.
"""
