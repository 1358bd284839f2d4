"""Exclusive platform connections when several gateways run: one receives, the others stand by.

Telegram's ``getUpdates`` serves one poller per bot and a Discord session receives every event, so
such a channel (``channels.base.Exclusive``) is started only by the gateway holding its lease
(``bot:lease:conn:<key>``).  The holder renews it every third of ``bus.lease_ms``; when it dies the
lease lapses and a standing-by gateway starts the channel.  A holder that finds its lease lost
stops receiving at once.  Every gateway can still send through the channel.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from bot.clock import SYSTEM_CLOCK, Clock
from bot.scale.leases import Leases
from bot.scale.streams import PREFIX

log = logging.getLogger(__name__)

STANDBY = "standby (another gateway process receives)"
"""An exclusive connection (Telegram polling, Discord) held by another gateway: healthy, not receiving."""


class Starter(Protocol):
    """What starts and stops a channel's connection, and reports it (the gateway's ``ChannelStarter``)."""

    status: dict[str, str]

    async def start_one(self, channel: Any) -> None: ...

    async def stop_one(self, channel: Any, status: str = ...) -> None: ...


class ExclusiveConnections:
    def __init__(
        self,
        redis: Any,
        *,
        owner: str,
        lease_ms: int,
        starter: Starter,
        channels: list[Any],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.leases = Leases(redis, owner, lease_ms)
        self.clock = clock
        self.starter = starter
        self.channels = channels
        self.period_s = lease_ms / 3000
        self._tasks: list[asyncio.Task[None]] = []
        self._held: dict[str, str] = {}

    def key(self, channel: Any) -> str:
        return f"{PREFIX}lease:conn:{channel.exclusive_key}"

    async def start(self) -> None:
        """Try each channel's lease once now (so a lone gateway starts receiving before it returns), then keep at it."""
        for channel in self.channels:
            self.starter.status[channel.name] = STANDBY
            await self._try(channel)
            self._tasks.append(asyncio.create_task(self._hold(channel), name=f"lease-{channel.name}"))

    async def _try(self, channel: Any) -> None:
        if await self.leases.acquire(self.key(channel)):
            self._held[channel.name] = self.key(channel)
            log.info("%s: this gateway holds the connection lease; receiving", channel.name)
            await self.starter.start_one(channel)

    async def _hold(self, channel: Any) -> None:
        while True:
            await self.clock.sleep(self.period_s)
            try:
                if channel.name not in self._held:
                    await self._try(channel)
                elif not (await self.leases.renew([self._held[channel.name]]))[0]:
                    del self._held[channel.name]
                    log.warning("%s: the connection lease was lost; another gateway receives now", channel.name)
                    await self.starter.stop_one(channel, STANDBY)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s: connection lease upkeep failed: %s", channel.name, exc)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for key in self._held.values():
            try:
                await self.leases.release(key)
            except Exception as exc:
                log.warning("could not release %s (it lapses by itself): %s", key, exc)
        self._held.clear()
