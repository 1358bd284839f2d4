"""``bot mcp list``: the configured MCP servers, whether they start and answer, and their tools.

``bot/cli/main.py`` mounts :data:`mcp_app` as ``bot mcp``.  Every enabled server is
connected (each bounded by its ``timeout_s``) and stopped again.  Exit codes:
0 every enabled server is up, 1 some are not, 2 configuration error.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.settings import ConfigOpt, cli_settings
from bot.config.settings import Settings

if TYPE_CHECKING:  # loaded by the commands that use them: ``bot`` starts without them
    from agents.spec import AgentSpec, SpecError
    from agents.tools.mcp.manager import McpManager, ServerStatus

mcp_app = typer.Typer(help="MCP servers: status and tools.", add_completion=False, no_args_is_help=True)


@mcp_app.callback()
def _group() -> None:
    """MCP servers: status and tools."""


@mcp_app.command("list")
def list_servers(
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document instead of text.")] = False,
    connect: Annotated[bool, typer.Option(help="Start/connect each server to list its tools.")] = True,
) -> None:
    """Servers, their status and tools (risk, confirmation)."""
    from agents.tools.mcp.manager import McpManager

    settings = cli_settings(config)
    logging.getLogger("agents.tools.mcp").setLevel(logging.ERROR)  # the listing says it better
    statuses = asyncio.run(_statuses(McpManager(settings.mcp.servers), connect))
    if as_json:
        typer.echo(json.dumps([asdict(s) for s in statuses], indent=2))
    elif not statuses:
        typer.echo("No MCP servers are configured (add them under mcp.servers in the config file).")
    else:
        for status in statuses:
            typer.echo(_describe(status))
    enabled = [s for s in statuses if s.state != "disabled"]
    if connect and any(s.state != "up" for s in enabled):
        raise typer.Exit(1)


async def _statuses(manager: McpManager, connect: bool) -> list[ServerStatus]:
    try:
        return await manager.connect_all() if connect else manager.status()
    finally:
        await manager.aclose()


def _describe(status: ServerStatus) -> str:
    head = f"{status.name}  [{status.transport}] {status.state}"
    if status.protocol:
        head += f" (protocol {status.protocol})"
    lines = [head, f"  {status.target}"]
    if status.reason:
        since = f", since {time.strftime('%H:%M:%S', time.localtime(status.down_since))}" if status.down_since else ""
        lines.append(f"  unavailable: {status.reason}{since}")
    if status.detail:
        lines.append(f"  detail: {status.detail}")
    for tool in status.tools:
        confirm = ", confirmed" if tool.needs_approval else ""
        lines.append(f"  - {tool.name} (risk {tool.risk}{confirm})")
    if status.state == "up" and not status.tools:
        lines.append("  (no tools)")
    return "\n".join(lines)


def mcp_problems(settings: Settings, specs: Iterable[AgentSpec], *, connect: bool = False) -> list[SpecError]:
    """MCP mistakes in agent files that the file alone cannot show (``bot agents validate``).

    Always: a server the agent lists that is disabled, and an allowed ``mcp.<server>.…`` tool of a
    server the agent does not list (it would never be offered).  With ``connect``: the servers are
    started and every ``mcp.<server>.<tool>`` name (not a pattern) is checked against their tools.
    """
    from agents.spec import SpecError
    from agents.specs.registry import is_pattern
    from agents.tools.mcp.toolset import split_tool_name

    specs = list(specs)
    configured = settings.mcp.servers
    problems: list[SpecError] = []
    refs: list[tuple[AgentSpec, str, str, str]] = []
    for spec in specs:
        listed = set(spec.mcp.servers)
        for i, server in enumerate(spec.mcp.servers):
            if server in configured and not configured[server].enabled:
                problems.append(SpecError(spec.source, f"mcp.servers[{i}]", f"MCP server {server!r} is disabled"))
        for where, names in (
            ("tools.allow", spec.tools.allow),
            ("tools.deny", spec.tools.deny),
            ("confirmation.require_confirmation", spec.confirmation.require_confirmation),
        ):
            for i, name in enumerate(names):
                parts = split_tool_name(name)
                if parts is None or is_pattern(parts[0]) or parts[0] not in configured:
                    continue
                if where == "tools.allow" and parts[0] not in listed:
                    reason = f"{name!r} is a tool of MCP server {parts[0]!r}, which mcp.servers does not list"
                    problems.append(SpecError(spec.source, f"{where}[{i}]", reason))
                elif not is_pattern(name):
                    refs.append((spec, f"{where}[{i}]", parts[0], parts[1]))
    if connect:
        problems += asyncio.run(_check_tool_names(settings, refs))
    return problems


async def _check_tool_names(settings: Settings, refs: list[tuple[AgentSpec, str, str, str]]) -> list[SpecError]:
    from agents.spec import SpecError
    from agents.tools.mcp.manager import McpManager

    servers = {server for _, _, server, _ in refs if settings.mcp.servers[server].enabled}
    manager = McpManager({name: settings.mcp.servers[name] for name in servers})
    try:
        found = await manager.tools_for(sorted(servers))
    finally:
        await manager.aclose()
    tools = {t.name for t in found.tools}
    down = {o.server: o.reason for o in found.outages}
    problems = []
    for spec, where, server, tool in refs:
        if server in down:
            reason = f"cannot check mcp.{server}.{tool}: MCP server {server!r} is unavailable ({down[server]})"
        elif server in servers and f"mcp.{server}.{tool}" not in tools:
            known = [t.split(".", 2)[2] for t in tools if t.startswith(f"mcp.{server}.")]
            close = difflib.get_close_matches(tool, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            reason = f"MCP server {server!r} has no tool {tool!r}{hint}"
        else:
            continue
        problems.append(SpecError(spec.source, where, reason))
    return problems
