"""Which partitions a worker holds: their leases, kept, shared out among the live workers, taken over and given up.

**One owner per partition.**  Each partition has a lease (``SET NX PX``, renewed every third of
``bus.lease_ms``); a worker reads only the partitions it holds, so a chat's events are handled by
one worker, one at a time, in stream order.  Workers share the partitions: each aims at
``ceil(P / live workers)`` (live: a heartbeat within the lease time), takes free partitions up to
that and gives up the rest (after finishing what it read from them).  A dead worker's leases lapse;
the next owner first raises the partition's fencing token (:mod:`bot.fencing`), runs its recovery
(``on_acquire``: caches dropped, unsent replies sent, runs cut off resumed, interrupts and scheduled
messages re-armed), then claims the entries the dead worker had read and not acknowledged
(``XAUTOCLAIM``), then reads new ones.

The reading and handling of what is held is :class:`~bot.scale.consumer.PartitionConsumer`'s; it hands this its
entry points (:class:`Intake`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from bot.clock import Clock
from bot.fencing import Fences
from bot.scale.leases import Leases
from bot.scale.streams import GROUP, WORKERS, inbound_stream, partition_lease, partition_of, text_of

log = logging.getLogger(__name__)

PartitionsHook = Callable[[set[int]], Awaitable[None]]
Work = Callable[[], Awaitable[None]]
AcquireHook = Callable[[set[int]], Awaitable[Mapping[str, Work]]]
"""Prepares partitions just taken; returns, per chat key, what its last owner left unfinished there (run first in
the chat's lane)."""
RaiseFence = Callable[[int, str], Awaitable[int]]
"""A new fencing token for a partition (the store's ``raise_fence``)."""


class Intake(Protocol):
    """What the holder hands the reading side: entries taken over, recovery work, and a partition given up."""

    def enqueue(self, partition: int, entry_id: bytes | str, fields: dict[Any, Any]) -> None: ...

    def push_work(self, partition: int, chat_key: str, work: Work) -> None: ...

    async def drain(self, partitions: set[int], deadline: float) -> None:
        """Return once nothing read from ``partitions`` is left unfinished (or at ``deadline``, monotonic)."""
        ...


class PartitionHolder:
    """The leases of one worker's partitions, and the sets of partitions it holds.

    ``owned``, ``readable`` and ``held`` are changed in place only (never rebound): the consumer reads the same
    set objects on its hot path."""

    def __init__(
        self,
        redis: Any,
        *,
        name: str,
        partitions: int,
        lease_ms: int,
        fences: Fences,
        raise_fence: RaiseFence | None,
        on_acquire: AcquireHook | None,
        on_release: PartitionsHook | None,
        clock: Clock,
    ) -> None:
        self.redis = redis
        self.name = name
        self.partitions = partitions
        self.lease_ms = lease_ms
        self.fences = fences
        self.raise_fence = raise_fence
        self.on_acquire = on_acquire
        self.on_release = on_release
        self.clock = clock
        self.leases = Leases(redis, name, lease_ms)
        self.owned: set[int] = set()
        """Partitions whose events are handled here."""
        self.readable: set[int] = set()
        """Partitions read for new entries: ``owned`` once what an earlier owner left pending was claimed."""
        self.held: set[int] = set()
        """Partitions whose lease this worker holds: ``owned`` and those being taken over or given up."""
        self.changed = asyncio.Event()
        """Set when ``readable`` changed (the reader waits on it when it has nothing to read)."""
        self.stopping = False
        self.claimed = 0
        self.renewed_at = clock.monotonic()
        """When the leases were last renewed (or the holder built): what ``/readyz`` and the metrics watch."""
        self.lost_count = 0
        self.intake: Intake | None = None
        """Set by the consumer before :meth:`start`."""

    async def start(self) -> None:
        await self._heartbeat()
        await self._balance()

    async def lease_loop(self) -> None:
        """Renew every held lease every third of its time (apart from balancing, which may take long)."""
        period = self.lease_ms / 3000
        while True:
            await self.clock.sleep(period)
            try:
                await self._heartbeat()
                await self._renew()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis unreachable: keep trying; leases lapse if it lasts
                log.warning("bus: lease upkeep failed: %s", exc)

    async def balance_loop(self) -> None:
        period = self.lease_ms / 3000
        rounds = 0
        while True:
            await self.clock.sleep(period)
            rounds += 1
            try:
                await self._balance()
                if rounds % 10 == 0:
                    await self._rescue()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("bus: balancing the partitions failed: %s", exc)

    async def release_all(self) -> None:
        """Give every partition up at once (the consumer finished what it read)."""
        held = sorted(self.held)
        self.owned.clear()
        self.readable.clear()
        self.held.clear()
        for partition in held:
            self.fences.drop(partition)
        try:
            if held and self.on_release is not None:
                await self.on_release(set(held))
            for partition in held:
                await self.leases.release(partition_lease(partition))
            await self.redis.zrem(WORKERS, self.name)
        except Exception as exc:
            log.warning("bus: could not give the partitions up (they lapse in %d ms): %s", self.lease_ms, exc)

    async def _heartbeat(self) -> None:
        now = int(self.clock.time() * 1000)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(WORKERS, {self.name: now})
            pipe.zremrangebyscore(WORKERS, 0, now - 3 * self.lease_ms)
            await pipe.execute()

    async def _live_workers(self) -> int:
        now = int(self.clock.time() * 1000)
        return max(1, int(await self.redis.zcount(WORKERS, now - self.lease_ms, "+inf")))

    def _until(self, sent: float) -> float:
        """Until when a lease set or renewed by a request sent at ``sent`` (monotonic) is surely held."""
        return sent + self.lease_ms / 1000

    async def _renew(self) -> None:
        held = sorted(self.held)
        sent = self.clock.monotonic()
        renewed = await self.leases.renew([partition_lease(p) for p in held])
        self.renewed_at = sent
        for partition, ok in zip(held, renewed, strict=True):
            if ok:
                self.fences.renewed(partition, self._until(sent))
        lost = {p for p, ok in zip(held, renewed, strict=True) if not ok} & self.held
        if lost:
            log.warning("bus: lost the lease on partitions %s (another worker has them now)", sorted(lost))
            await self.lost(lost)

    async def lost(self, partitions: set[int]) -> None:
        """``partitions`` are no longer ours: nothing more is handled or acknowledged for them here."""
        for partition in partitions:
            self.fences.drop(partition)
        self.lost_count += len(partitions & self.held)
        self.owned -= partitions
        self.readable -= partitions
        self.held -= partitions
        self.changed.set()
        if self.on_release is not None:
            await self.on_release(partitions)

    async def _balance(self) -> None:
        if self.stopping:
            return
        target = math.ceil(self.partitions / await self._live_workers())
        if len(self.owned) < target:
            # Only partitions nobody holds (one MGET): trying random ones that others hold left the last free
            # partitions of a dead worker waiting for a lucky draw (seen: 30 s and more).
            keys = [partition_lease(p) for p in range(self.partitions)]
            holders = await self.redis.mget(keys)
            free = [p for p, holder in enumerate(holders) if holder is None and p not in self.held]
            random.shuffle(free)  # workers starting together do not all try the same ones first
            want = free[: max(0, target - len(self.owned))]
            sent = self.clock.monotonic()
            got = {
                p
                for p, ok in zip(want, await self.leases.acquire_many([partition_lease(p) for p in want]), strict=True)
                if ok
            }
            if got:
                self.held |= got
                await self._adopt(got, self._until(sent))
        elif len(self.owned) > target:
            surplus = sorted(self.owned)[: len(self.owned) - target]
            await self._give_up(set(surplus))

    async def _adopt(self, partitions: set[int], until: float) -> None:
        """Fence ``partitions`` with new tokens, recover what their last owner left, claim its unacknowledged
        entries, then read them."""
        assert self.intake is not None
        log.info("bus: %s takes partitions %s", self.name, sorted(partitions))
        for partition in sorted(partitions):
            token = await self.raise_fence(partition, self.name) if self.raise_fence is not None else 0
            self.fences.hold(partition, token, until)
        work = await self.on_acquire(partitions) if self.on_acquire is not None else {}
        taken = partitions & self.held  # unless lost meanwhile
        self.owned |= taken
        # Beside reading, not before it: each chat's recovery goes first in its own lane, so a chat with nothing
        # to recover is answered at once, and one with something is answered right after it, in order.
        for chat_key, job in work.items():
            partition = partition_of(chat_key, self.partitions)
            if partition in taken:
                self.intake.push_work(partition, chat_key, job)
        for partition in sorted(taken):
            await self._claim(partition)
        self.readable |= taken & self.held
        self.changed.set()

    async def _claim(self, partition: int) -> None:
        """Take over the entries an earlier owner read and did not acknowledge, oldest first."""
        assert self.intake is not None
        stream = inbound_stream(partition)
        start: Any = "0-0"
        for _ in range(1000):
            reply = await self.redis.xautoclaim(stream, GROUP, self.name, min_idle_time=0, start_id=start, count=500)
            start, entries = reply[0], reply[1]
            for entry_id, fields in entries:
                if fields is None:
                    continue  # trimmed away
                self.claimed += 1
                self.intake.enqueue(partition, entry_id, fields)
            if start in (b"0-0", "0-0") or not entries:
                return

    async def _rescue(self) -> None:
        """Entries of our partitions left pending with another consumer for longer than a lease (it lost the
        lease while it still ran, and read after the hand-over): handled here, once (the inbox guard)."""
        assert self.intake is not None
        for partition in sorted(self.readable):
            stream = inbound_stream(partition)
            stale = await self.redis.xpending_range(stream, GROUP, "-", "+", 100, idle=self.lease_ms)
            ids = [e["message_id"] for e in stale if text_of(e["consumer"]) != self.name]
            if not ids or partition not in self.readable:
                continue
            claimed = await self.redis.xclaim(stream, GROUP, self.name, self.lease_ms, ids)
            log.warning(
                "bus: %d entries of partition %d left with another worker are handled here", len(claimed), partition
            )
            for entry_id, fields in claimed:
                if fields:
                    self.claimed += 1
                    self.intake.enqueue(partition, entry_id, fields)

    async def _give_up(self, partitions: set[int]) -> None:
        """Stop reading ``partitions``, finish what was read from them, then release their leases."""
        assert self.intake is not None
        self.readable -= partitions
        self.owned -= partitions
        self.changed.set()
        await self.intake.drain(partitions, self.clock.monotonic() + self.lease_ms / 1000)
        if self.on_release is not None:
            await self.on_release(partitions)
        self.held -= partitions
        for partition in partitions:
            self.fences.drop(partition)
            await self.leases.release(partition_lease(partition))
        log.info("bus: %s gave partitions %s up", self.name, sorted(partitions))
