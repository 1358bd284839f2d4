"""MCP servers in the gateway: each agent's servers' tools, and telling users about outages.

The tools of the servers an agent lists are added to its tool pool (servers
are connected lazily, the first time such an agent runs).  When a server
cannot serve, the run goes on without it, and the chat gets one notice per
outage: not one per message, and again only after the server recovered and
failed anew.  The notice is sent to the chat of the run that met the outage:
at once when the pool knows the chat, otherwise just before the run's first
message (the typing indicator the run manager sends right after building the
run's context, in the same task).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable

from agents.tools.base import Tool
from agents.tools.mcp.faults import Outage
from agents.tools.mcp.manager import McpManager
from bot.catalog import AgentDef
from bot.events import ChatKey, OutboundMessage
from bot.settings import Settings

log = logging.getLogger(__name__)

Send = Callable[[OutboundMessage], Awaitable[str | None]]

_UNTOLD: contextvars.ContextVar[list[Outage] | None] = contextvars.ContextVar("mcp_untold_outages", default=None)
"""Outages met while building a run's tool pool, to be told to that run's chat."""


def outage_notice(outage: Outage) -> str:
    return (
        f"⚠️ The tool server '{outage.server}' is unavailable ({outage.reason}). "
        "I'll answer without its tools for now and reconnect automatically."
    )


class McpPool:
    """The gateway's MCP servers and the once-per-outage notices."""

    def __init__(self, settings: Settings, send: Send) -> None:
        self.manager = McpManager(settings.mcp.servers, on_fault=self._on_fault)
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
        for outage in found.outages:
            if chat is not None:
                await self.tell(chat, outage)
            else:
                untold = _UNTOLD.get()
                if untold is None:
                    untold = []
                    _UNTOLD.set(untold)
                untold.append(outage)
        return found.tools

    def sending(self, send: Send) -> Send:
        """``send`` that first tells the message's chat about outages its run met (see the module doc)."""

        async def send_with_notices(message: OutboundMessage) -> str | None:
            untold = _UNTOLD.get()
            if untold:
                _UNTOLD.set(None)
                for outage in untold:
                    await self.tell(message.chat, outage)
            return await send(message)

        return send_with_notices

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
