"""What every channel adapter provides to the gateway."""

from __future__ import annotations

from typing import Protocol

from bot.bus import Bus
from bot.events import OutboundMessage


class Channel(Protocol):
    """A platform adapter.

    ``start`` begins receiving (publishing :class:`~bot.events.InboundMessage`
    and :class:`~bot.events.Action` events on the bus) and returns; ``send``
    delivers one outbound message and returns the platform message reference
    (so a prompt can be edited later, even after a restart).
    """

    name: str

    async def start(self, bus: Bus) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, message: OutboundMessage) -> str | None: ...
