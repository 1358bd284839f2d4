"""The tool names an agent file may name, for the checks of ``bot agents validate`` and the gateway's warnings.

Derived, never listed here: the built-in toolset's tools (every one, enabled or not) and the gateway tools of
:data:`GATEWAY_TOOL_MODULES`, each of which states the names of the tools it makes (``TOOL_NAMES``) beside
their definitions.  A module that makes a new gateway tool is added to that registry once;
``tests/test_gateway_tool_names.py`` checks every tool a gateway offers is known.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType


def gateway_tool_modules() -> Sequence[ModuleType]:
    """The registry: the modules that make the gateway's own tools (each with its ``TOOL_NAMES``)."""
    from agents import react
    from bot.jobs import tools as jobs
    from bot.media import service as media
    from bot.memory import service as memory
    from bot.runs import scheduled

    return (react, scheduled, media, jobs, memory)


@functools.cache
def known_tool_names() -> frozenset[str]:
    """The tool names an agent file may use: the built-in tools and the gateway's; MCP tools are checked by
    their server."""
    from agents.tools import builtin_toolset
    from agents.tools.command import RUN_COMMAND
    from agents.tools.config import ToolsConfig

    # Every built-in tool, enabled or not: an agent may name run_command before the operator turns it on
    # (or before a sandbox for it is installed).
    builtin = {t.name for t in builtin_toolset(ToolsConfig()).tools} | {RUN_COMMAND}
    return frozenset(builtin).union(*(module.TOOL_NAMES for module in gateway_tool_modules()))
