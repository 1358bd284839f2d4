"""MCP servers in the gateway: each agent's servers' tools, and telling users about outages.

The tools of the servers an agent lists are added to its tool pool (servers
are connected lazily, the first time such an agent runs).  When a server
cannot serve, the run goes on without it, and the chat gets one notice per
outage: not one per message, and again only after the server recovered and
failed anew.  The notice goes to the chat of the run that met the outage, as
soon as its tool pool is built.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from agents.tools.base import Tool
from agents.tools.mcp.config import McpServerConfig
from agents.tools.mcp.faults import Outage
from agents.tools.mcp.manager import McpManager
from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import ChatKey, OutboundMessage
from bot.runs.catalog import AgentDef

log = logging.getLogger(__name__)

Send = Callable[[OutboundMessage], Awaitable[str | None]]


def outage_notice(outage: Outage) -> str:
    return (
        f"⚠️ The tool server '{outage.server}' is unavailable ({outage.reason}). "
        "I'll answer without its tools for now and reconnect automatically."
    )


class McpPool:
    """The gateway's MCP servers and the once-per-outage notices."""

    def __init__(self, servers: Mapping[str, McpServerConfig], send: Send, clock: Clock = SYSTEM_CLOCK) -> None:
        self.manager = McpManager(servers, on_fault=self._on_fault, clock=clock)
        self._send = send
        self._told: dict[str, tuple[int, set[str]]] = {}
        """Per server: the outage id last told, and the chats told about it."""

    def start(self) -> None:
        self.manager.warm_up()

    async def aclose(self) -> None:
        await self.manager.aclose()

    async def tools(self, agent: AgentDef, chat: ChatKey | None = None) -> list[Tool]:
        """The tools of the MCP servers ``agent`` lists (the catalog applies allow/deny afterwards)."""
        if not agent.mcp_servers:
            return []
        found = await self.manager.tools_for(agent.mcp_servers)
        if chat is not None:  # a run's chat hears of each outage once; callers outside a run tell nobody
            for outage in found.outages:
                await self.tell(chat, outage)
        return found.tools

    async def tell(self, chat: ChatKey, outage: Outage) -> None:
        """Send the outage notice to ``chat`` unless it was told about this outage already."""
        if outage.id == 0:  # the gateway is stopping: nobody is waiting for tools any more
            return
        told_id, chats = self._told.get(outage.server, (-1, set()))
        if told_id != outage.id:
            chats = set()
            self._told[outage.server] = (outage.id, chats)
        key = str(chat)
        if key in chats:
            return
        chats.add(key)
        await self._send(OutboundMessage(chat=chat, text=outage_notice(outage), kind="notice"))

    async def _on_fault(self, outage: Outage, chat_key: str) -> None:
        if chat_key:
            await self.tell(ChatKey.parse(chat_key), outage)
