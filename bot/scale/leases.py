"""Leases in Redis: a key held by one owner, renewed before it expires, released by its owner only.

A lease that is not renewed within its time-to-live lapses, so a process that dies (even by
SIGKILL) gives up what it held after at most ``ttl_ms``.  Renewal and release check the owner
first (a Lua script), so a process that lost a lease can neither extend nor delete the new
holder's.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import Any

from bot.ids import new_id

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
"""


def process_name(role: str) -> str:
    """A name unique to this process (host, pid and a random part): a lease owner and a consumer name."""
    return f"{role}-{socket.gethostname()[:24]}-{os.getpid()}-{new_id(6)}"


class Leases:
    """Acquire, renew and release leases held by ``owner``."""

    def __init__(self, redis: Any, owner: str, ttl_ms: int) -> None:
        self.redis = redis
        self.owner = owner
        self.ttl_ms = ttl_ms
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)

    async def acquire(self, key: str) -> bool:
        """Take ``key`` if nobody holds it."""
        return bool(await self.redis.set(key, self.owner, nx=True, px=self.ttl_ms))

    async def acquire_many(self, keys: Sequence[str]) -> list[bool]:
        """:meth:`acquire` for each key, in one round trip."""
        if not keys:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.set(key, self.owner, nx=True, px=self.ttl_ms)
            return [bool(ok) for ok in await pipe.execute()]

    async def renew(self, keys: Sequence[str]) -> list[bool]:
        """Extend each held key by the time-to-live; False where it was lost (lapsed or taken)."""
        if not keys:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                await self._renew(keys=[key], args=[self.owner, self.ttl_ms], client=pipe)
            return [bool(ok) for ok in await pipe.execute()]

    async def release(self, key: str) -> bool:
        """Give ``key`` up (False: it was no longer ours)."""
        return bool(await self._release(keys=[key], args=[self.owner]))
