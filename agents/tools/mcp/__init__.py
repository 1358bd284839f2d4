"""MCP servers as toolsets.

Each server configured under ``mcp.servers.<name>`` (stdio ``command`` or
streamable-HTTP ``url``) becomes the toolset ``mcp.<name>``; its tools are
named ``mcp.<name>.<tool>`` in allow/deny lists and confirmations.  Model
clients map names they cannot send (too long, ``/``) to safe ones reversibly
(:mod:`agents.models.gemini_schema`).

Modules: :mod:`.config` (settings, no SDK import), :mod:`.connection` (one
owner task per server), :mod:`.transport` (stdio / HTTP clients),
:mod:`.faults` (outages), :mod:`.toolset` (tools, risk, confirmation),
:mod:`.results` (results for the model), :mod:`.manager` (all servers),
:mod:`.launcher` (stdio servers die with the gateway), :mod:`.errlog`
(a server's stderr).  The ``mcp`` SDK
itself is imported only when a server is first connected, and this package
exports only the configuration (settings import it): import the rest from
the submodules.
"""

from agents.tools.mcp.config import McpConfig, McpConfigError, McpServerConfig

__all__ = ["McpConfig", "McpConfigError", "McpServerConfig"]
