"""Delivers outbound messages to the channel adapter of their chat."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from bot.events import OutboundMessage

log = logging.getLogger(__name__)


class Sender(Protocol):
    name: str

    async def send(self, message: OutboundMessage) -> str | None: ...


class DeliveryError(RuntimeError):
    """No adapter could deliver a message."""


class Outbox:
    """Routes each :class:`OutboundMessage` to the adapter named by its chat key.

    Known secret values in a text (a model repeating a token it saw in a tool's output)
    are replaced by ``***`` before anything reaches a platform.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._channels: dict[str, Sender] = {}
        self._secrets = tuple(sorted({v for v in secrets if len(v) >= 8}, key=len, reverse=True))

    def register(self, channel: Sender) -> None:
        self._channels[channel.name] = channel

    def channels(self) -> list[str]:
        return sorted(self._channels)

    async def send(self, message: OutboundMessage) -> str | None:
        """Send and return the platform message reference (None for typing/no reference)."""
        channel = self._channels.get(message.chat.channel)
        if channel is None:
            raise DeliveryError(f"no channel adapter for {message.chat.channel!r}")
        text = message.text
        if any(secret in text for secret in self._secrets):
            for secret in self._secrets:
                text = text.replace(secret, "***")
            message = message.model_copy(update={"text": text})
        return await channel.send(message)
