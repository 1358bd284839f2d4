"""A gateway's liveness on the bus: who reads the outbound streams now, and which readers are dead.

A gateway's relay reads the outbound streams as the consumer ``<process name>.<epoch>`` and holds the key
``bot:gateway:<consumer>`` (a lease, :class:`~bot.scale.leases.Leases`: ``SET NX PX`` for :data:`ALIVE_TTL_MS`,
renewed every quarter of it).  Its own clock says until when the key is surely held (``until``: the time the last
renewal was sent, plus the TTL); it sends nothing read under a consumer name past that moment.  When a renewal finds
the key gone (the process stalled, Redis was away), or the relay found itself past ``until``, it starts a new
epoch (a new consumer name and key): whatever the old name had read is then a dead consumer's, adopted like a
killed gateway's.

A consumer of the ``gateways`` group is **dead** when its key is gone and it has not touched the group for a TTL
(Redis's ``idle`` of the consumer: a gateway of an older version, which has no key but reads every second, is not
taken for dead).  A SIGKILLed gateway is so at most one TTL after its last renewal.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.clock import SYSTEM_CLOCK, Clock
from bot.scale.leases import Leases
from bot.scale.streams import PREFIX, text_of

log = logging.getLogger(__name__)

ALIVE_TTL_MS = 3_000
"""A gateway that stops renewing its key is dead this long after its last renewal."""
FORGET_MS = 600_000
"""A dead consumer with nothing pending leaves its group after this long (each gateway start makes a new one)."""


def alive_key(consumer: str) -> str:
    return f"{PREFIX}gateway:{consumer}"


class Liveness:
    """The current consumer name of a gateway's relay and its key; finds the group's dead consumers."""

    def __init__(self, redis: Any, name: str, *, ttl_ms: int = ALIVE_TTL_MS, clock: Clock = SYSTEM_CLOCK) -> None:
        self.redis = redis
        self.name = name
        self.ttl_ms = ttl_ms
        self.clock = clock
        self.epoch = 0
        self.consumer = ""
        self.until = float("-inf")
        """Monotonic: until when this epoch's key is surely held (nothing read under it is sent after that)."""
        self.lapsed = False
        """Set when the relay found itself past ``until``: the next renewal starts a new epoch."""
        self._leases: Leases | None = None

    @property
    def every_s(self) -> float:
        return self.ttl_ms / 4000

    async def announce(self) -> None:
        """Start a new epoch: a consumer name never used before, with its key."""
        if self._leases is not None:
            await self._release()
        self.epoch += 1
        self.consumer = f"{self.name}.{self.epoch}"
        self._leases = Leases(self.redis, self.consumer, self.ttl_ms)
        sent = self.clock.monotonic()
        if await self._leases.acquire(alive_key(self.consumer)):
            self.until = sent + self.ttl_ms / 1000
        self.lapsed = False
        if self.epoch > 1:
            log.warning("relay: this gateway was not alive for a while; it reads as %s now", self.consumer)

    async def renew(self) -> None:
        """Keep the key; a new epoch when it lapsed (or the relay found itself past ``until``)."""
        assert self._leases is not None
        sent = self.clock.monotonic()
        [held] = await self._leases.renew([alive_key(self.consumer)])
        if held and not self.lapsed:
            self.until = sent + self.ttl_ms / 1000
            return
        await self.announce()

    def alive(self, consumer: str) -> bool:
        """Whether what was read as ``consumer`` may be sent now; when not, and it is the current epoch, the next
        renewal starts a new one (what it read is then adopted as a dead consumer's)."""
        if consumer == self.consumer and self.clock.monotonic() < self.until:
            return True
        if consumer == self.consumer:
            self.lapsed = True
        return False

    async def stop(self) -> None:
        if self._leases is not None:
            await self._release()

    async def _release(self) -> None:
        assert self._leases is not None
        try:
            await self._leases.release(alive_key(self.consumer))
        except Exception as exc:
            log.debug("relay: could not release %s (it lapses by itself): %s", alive_key(self.consumer), exc)
        self.until = float("-inf")

    async def dead(self, stream: str, group: str) -> list[str]:
        """The consumers of ``group`` on ``stream`` that are dead and have entries pending (those without any,
        dead for :data:`FORGET_MS`, are removed from the group)."""
        consumers = [
            (text_of(c["name"]), int(c.get("pending") or 0), int(c.get("idle") or 0))
            for c in await self.redis.xinfo_consumers(stream, group)
        ]
        candidates = [
            (name, pending)
            for name, pending, idle in consumers
            if name != self.consumer and idle >= self.ttl_ms and (pending or idle >= FORGET_MS)
        ]
        if not candidates:
            return []
        keys = await self.redis.mget([alive_key(name) for name, _ in candidates])
        dead = []
        for (name, pending), key in zip(candidates, keys, strict=True):
            if key is not None:
                continue
            if pending:
                dead.append(name)
            else:
                await self.redis.xgroup_delconsumer(stream, group, name)
        return dead
