"""Tools and toolsets: the built-in tools, the ledger, MCP servers (a toolset each)."""

from agents.tools.base import RISK_ORDER, StaticToolset, Tool, ToolContext, ToolError, Toolset, select_tools, tool
from agents.tools.command import command_tools
from agents.tools.config import ToolsConfig
from agents.tools.files import file_tools
from agents.tools.http import http_tools
from agents.tools.time import time_tools


def builtin_toolset(config: ToolsConfig) -> StaticToolset:
    """The built-in tools (``run_command`` only when enabled), less the disabled ones."""
    tools = [
        *time_tools(),
        *http_tools(config.http),
        *file_tools(config.workspace, config.max_file_bytes),
        *command_tools(config.run_command, config.workspace),
    ]
    return StaticToolset("builtin", [t for t in tools if t.name not in config.disabled])


__all__ = [
    "RISK_ORDER",
    "StaticToolset",
    "Tool",
    "ToolContext",
    "ToolError",
    "Toolset",
    "ToolsConfig",
    "builtin_toolset",
    "select_tools",
    "tool",
]
