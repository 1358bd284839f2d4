"""Tools and toolsets: the built-in tools, the ledger, MCP servers (a toolset each)."""

from agents.tools.base import (
    RISK_ORDER,
    Risk,
    StaticToolset,
    Tool,
    ToolContext,
    ToolError,
    Toolset,
    matches,
    select_tools,
    tool,
)
from agents.tools.builtin import builtin_toolset
from agents.tools.config import CommandToolConfig, HttpToolConfig, ToolsConfig

__all__ = [
    "RISK_ORDER",
    "CommandToolConfig",
    "HttpToolConfig",
    "Risk",
    "StaticToolset",
    "Tool",
    "ToolContext",
    "ToolError",
    "Toolset",
    "ToolsConfig",
    "builtin_toolset",
    "matches",
    "select_tools",
    "tool",
]
