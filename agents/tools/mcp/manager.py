"""All configured MCP servers: tools for a run, status, shutdown.

Servers are connected lazily, only when an agent that lists them runs, and
stay connected for reuse.  :meth:`McpManager.tools_for` never fails a run: a
server that cannot serve is reported as an :class:`Outage` beside the tools
of the others, and the caller decides whom to tell.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agents.clock import SYSTEM_CLOCK, Clock
from agents.tools.base import Tool
from agents.tools.mcp.config import McpServerConfig
from agents.tools.mcp.connection import ServerConnection
from agents.tools.mcp.faults import Outage, ServerUnavailable
from agents.tools.mcp.toolset import FaultHook, McpToolset, tool_name

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class McpTools:
    """One run's MCP tools, and the servers that could not serve them."""

    tools: list[Tool]
    outages: list[Outage]


@dataclass(frozen=True)
class ToolStatus:
    name: str
    risk: str
    needs_approval: bool


@dataclass(frozen=True)
class ServerStatus:
    """What ``bot mcp list`` shows for one server."""

    name: str
    transport: str
    target: str
    state: str
    """``disabled``, ``idle`` (not connected yet), ``connecting``, ``up``, ``down`` or ``stopped``."""
    tools: tuple[ToolStatus, ...] = ()
    reason: str | None = None
    detail: str | None = None
    retry_in_s: float | None = None
    protocol: str | None = None
    down_since: float | None = None


class McpManager:
    """The configured servers, one :class:`McpToolset` (and connection) each."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        on_fault: FaultHook | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``clock``: the servers' (their reconnect back-offs and health checks are measured on it)."""
        self.configs = dict(servers)
        self.toolsets = {
            name: McpToolset(ServerConnection(name, config, clock), on_fault=on_fault)
            for name, config in servers.items()
            if config.enabled
        }
        self._warned: set[str] = set()
        self._warm: asyncio.Task[None] | None = None

    def warm_up(self) -> None:
        """Import the MCP SDK in a thread now (about a second) rather than during the first run that needs it."""
        if self.toolsets and self._warm is None:
            self._warm = asyncio.get_running_loop().create_task(_import_sdk())

    async def tools_for(self, servers: Iterable[str]) -> McpTools:
        """The tools of ``servers`` (connecting them if needed) and the outages of those that failed."""
        names = [s for s in dict.fromkeys(servers) if self._known(s)]
        if self._warm is not None:
            await self._warm
        found = await asyncio.gather(*(self._server_tools(name) for name in names))
        tools = [t for listed, _ in found for t in listed]
        return McpTools(tools=tools, outages=[outage for _, outage in found if outage is not None])

    async def _server_tools(self, server: str) -> tuple[list[Tool], Outage | None]:
        try:
            return list(await self.toolsets[server].list_tools()), None
        except ServerUnavailable as exc:
            return [], exc.outage

    def _known(self, server: str) -> bool:
        if server in self.toolsets:
            return True
        if server not in self._warned:
            self._warned.add(server)
            why = "is disabled" if server in self.configs else "is not configured under mcp.servers"
            log.warning("an agent lists the MCP server %r, which %s; it is skipped", server, why)
        return False

    def status(self) -> list[ServerStatus]:
        """Every configured server, connected or not (nothing is connected by asking)."""
        out = []
        for name, config in self.configs.items():
            toolset = self.toolsets.get(name)
            if toolset is None:
                out.append(ServerStatus(name, config.transport, config.target(), "disabled"))
                continue
            conn = toolset.connection
            tools = tuple(
                ToolStatus(tool_name(name, t.name), toolset.risk(t.name), toolset.needs_approval(t.name))
                for t in conn.tools
            )
            outage = conn.outage
            out.append(
                ServerStatus(
                    name,
                    config.transport,
                    config.target(),
                    conn.state,
                    tools,
                    reason=outage.reason if outage else None,
                    detail=conn.detail or None,
                    retry_in_s=conn.retry_in(),
                    protocol=conn.protocol,
                    down_since=outage.since if outage else None,
                )
            )
        return out

    async def connect_all(self) -> list[ServerStatus]:
        """Connect every enabled server (for ``bot mcp list``), then report."""
        await self.tools_for(self.toolsets)
        return self.status()

    async def aclose(self) -> None:
        """Stop every server; bounded (a stuck server is killed)."""
        if self._warm is not None and not self._warm.done():
            self._warm.cancel()
        started = time.perf_counter()
        await asyncio.gather(*(t.connection.aclose() for t in self.toolsets.values()))
        if self.toolsets:
            log.debug("MCP servers stopped in %.2fs", time.perf_counter() - started)


async def _import_sdk() -> None:
    try:
        await asyncio.to_thread(importlib.import_module, "mcp.client.client")
    except ImportError as exc:
        log.warning("the MCP SDK cannot be imported: %s", exc)
