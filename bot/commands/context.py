"""What a command handler may use: the ports it needs, not the whole supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.commands.registry import CommandRegistry
from bot.config.settings import Settings
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.interrupts.service import InterruptService
from bot.memory.service import MemoryService
from bot.routing.policy import RoutePolicy
from bot.runs.scheduled import ScheduledMessages
from bot.store.base import Store
from bot.store.ports import Runs
from bot.tracing.recorder import Tracing


@dataclass(frozen=True)
class CommandContext:
    settings: Settings
    commands: CommandRegistry
    """For ``/help``."""
    store: Store
    runs: Runs
    interrupts: InterruptService
    routes: RoutePolicy
    delivery: Delivery
    scheduled: ScheduledMessages
    tracing: Tracing | None = None
    memory: MemoryService | None = None

    async def notice(self, chat: ChatKey, text: str) -> None:
        await self.delivery.send(OutboundMessage(chat=chat, text=text, kind="notice"))

    async def audit(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Change a stored setting (``scope``: a chat's settings key or ``*``), with an audit row."""
        await self.runs.change_setting(actor, scope, name, old, new)

    async def grants(self, chat: ChatKey) -> list[str]:
        """Tools always allowed in ``chat`` (no confirmation)."""
        return list((await self.store.chat_settings(chat.settings_key)).get("grants", []))
