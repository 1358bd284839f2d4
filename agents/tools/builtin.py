"""The ``builtin`` toolset: time, http_get, workspace files, and run_command when enabled."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents.clock import SYSTEM_CLOCK, Clock
from agents.tools.base import StaticToolset
from agents.tools.command import command_tools
from agents.tools.config import ToolsConfig
from agents.tools.files import file_tools
from agents.tools.time import time_tools

BUILTIN = "builtin"


def builtin_toolset(config: ToolsConfig, *, hidden: Sequence[Path] = (), clock: Clock = SYSTEM_CLOCK) -> StaticToolset:
    """The toolset named ``builtin``: every built-in tool the configuration enables (``run_command`` only when
    enabled and sandboxed), less the disabled ones.  ``hidden``: the bot's own files, which the file tools refuse
    and ``run_command``'s sandbox masks; ``clock``: the time ``get_current_time`` tells."""
    from agents.tools.http import http_tools  # aiohttp loads with the first toolset, not with the settings

    tools = [
        *time_tools(clock.now),
        *http_tools(config.http),
        *file_tools(config.workspace, config.max_file_bytes, hidden=hidden),
        *command_tools(config.run_command, config.workspace, hidden=hidden),
    ]
    return StaticToolset(BUILTIN, [t for t in tools if t.name not in config.disabled])
