"""Delivers outbound messages to the channel adapter of their chat."""

from __future__ import annotations

import logging
from typing import Protocol

from bot.events import OutboundMessage

log = logging.getLogger(__name__)


class Sender(Protocol):
    name: str

    async def send(self, message: OutboundMessage) -> str | None: ...


class DeliveryError(RuntimeError):
    """No adapter could deliver a message."""


class Outbox:
    """Routes each :class:`OutboundMessage` to the adapter named by its chat key."""

    def __init__(self) -> None:
        self._channels: dict[str, Sender] = {}

    def register(self, channel: Sender) -> None:
        self._channels[channel.name] = channel

    def channels(self) -> list[str]:
        return sorted(self._channels)

    async def send(self, message: OutboundMessage) -> str | None:
        """Send and return the platform message reference (None for typing/no reference)."""
        channel = self._channels.get(message.chat.channel)
        if channel is None:
            raise DeliveryError(f"no channel adapter for {message.chat.channel!r}")
        return await channel.send(message)
