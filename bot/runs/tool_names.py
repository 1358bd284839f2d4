"""The tool names an agent file may name, for the checks of ``bot agents validate`` and the gateway's warnings."""

from __future__ import annotations

import functools


@functools.cache
def known_tool_names() -> frozenset[str]:
    """The tool names an agent file may use: the built-in tools and the gateway's (``ask_user``,
    ``schedule_message``, ``schedule_job``, ``send_file``, the memory tools).

    A stand-in until the toolset registry answers this; MCP tools are checked by their server.
    """
    from agents.react import ASK_USER
    from agents.tools import builtin_toolset
    from agents.tools.config import ToolsConfig

    # Every tool, enabled or not: an agent may name run_command before the operator turns it on
    # (or before a sandbox for it is installed).
    return frozenset({t.name for t in builtin_toolset(ToolsConfig()).tools}) | {
        ASK_USER,
        "schedule_message",
        "schedule_job",
        "send_file",
        "run_command",
        "remember",
        "recall",
        "forget",
        "update_session",
    }
