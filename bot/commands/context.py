"""What a command handler may use: the ports it needs, not the whole supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bot.commands.registry import CommandRegistry
from bot.config.jobs import JobsSection
from bot.config.memory import MemorySection
from bot.config.model import ModelSection
from bot.config.settings import BotSection, ChannelsSection, RoutingSection, StoreSection
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.interrupts.service import InterruptService
from bot.memory.service import MemoryService
from bot.routing.policy import RoutePolicy
from bot.runs.scheduled import ScheduledMessages
from bot.store.base import Store
from bot.store.ports import Runs
from bot.tracing.recorder import Tracing


class CommandSettings(Protocol):
    """The sections of the settings commands read (:class:`~bot.config.settings.Settings` has them; a command
    that needs another section adds it here)."""

    @property
    def bot(self) -> BotSection: ...

    @property
    def channels(self) -> ChannelsSection: ...

    @property
    def jobs(self) -> JobsSection: ...

    @property
    def store(self) -> StoreSection: ...

    @property
    def model(self) -> ModelSection: ...

    @property
    def routing(self) -> RoutingSection: ...

    @property
    def memory(self) -> MemorySection: ...


@dataclass(frozen=True)
class CommandContext:
    settings: CommandSettings
    """Commands are an open set (built-in, admin, jobs, memory, pairing, session…): they share this narrow view
    of the settings rather than each taking its own sections."""
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
