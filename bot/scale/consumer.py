"""A worker's side of the Redis bus: the partitions it holds, read in order, acknowledged after handling.

**One owner per partition.**  Each partition has a lease (``SET NX PX``, renewed every third of
``bus.lease_ms``); a worker reads only the partitions it holds, so a chat's events are handled by
one worker, one at a time, in stream order.  Workers share the partitions: each aims at
``ceil(P / live workers)`` (live: a heartbeat within the lease time), takes free partitions up to
that and gives up the rest (after finishing what it read from them).  A dead worker's leases lapse;
the next owner first runs the partition's recovery (``on_acquire``: caches dropped, unsent replies
sent, runs cut off resumed, interrupts and scheduled messages re-armed), then claims the entries the
dead worker had read and not acknowledged (``XAUTOCLAIM``), then reads new ones.

**Acknowledged after handling.**  ``XACK`` follows the handler, which commits its result (the
inbox row marked handled under a guard, with the run's row) first; an entry handled twice (its
worker died between that commit and the ack) is skipped by that guard, so handling is exactly once.

**Fenced.**  A lease can lapse while its holder still works (a stalled process).  So each new owner raises the
partition's fencing token in the database before it handles anything there (:mod:`bot.fencing`), and the
partition's work runs fenced with the token it was read under: a write carrying an old token is refused in its
own transaction, a send is skipped once the lease is believed lost, and the work stops unacknowledged
(:class:`~bot.fencing.LeaseLost`).  The worker then lets the partition go; its next owner claims what was left.
A lapse can delay a chat, never handle one of its events twice.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.aio import cancel_and_wait
from bot.bus import Handler, Lanes, Urgent
from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import InboundEvent
from bot.fencing import Fence, Fences, LeaseLost, fenced
from bot.ops.metrics import LeaseState
from bot.scale.batched import Batched
from bot.scale.leases import Leases
from bot.scale.streams import (
    DECREMENT,
    GROUP,
    QUEUED,
    WORKERS,
    decode,
    ensure_group,
    inbound_stream,
    partition_lease,
    partition_of,
    text_of,
)

log = logging.getLogger(__name__)

PartitionsHook = Callable[[set[int]], Awaitable[None]]
Work = Callable[[], Awaitable[None]]
AcquireHook = Callable[[set[int]], Awaitable[Mapping[str, Work]]]
"""Prepares partitions just taken; returns, per chat key, what its last owner left unfinished there (run first in
the chat's lane)."""
RaiseFence = Callable[[int, str], Awaitable[int]]
"""A new fencing token for a partition (the store's ``raise_fence``)."""


@dataclass
class _Entry:
    partition: int
    entry_id: bytes | str | None
    """None: not a stream entry but ``work`` (a chat's recovery), acknowledged to nobody."""
    event: InboundEvent | None
    token: int | None
    """The partition's fencing token when the entry was read (None: not held then)."""
    handled: bool = False
    work: Work | None = None


class PartitionConsumer:
    """Holds partition leases and hands their events to ``handler`` (per chat in order, chats concurrently)."""

    def __init__(
        self,
        redis: Any,
        *,
        name: str,
        partitions: int,
        lease_ms: int,
        handler: Handler,
        urgent: Urgent | None = None,
        on_urgent: Handler | None = None,
        on_acquire: AcquireHook | None = None,
        on_release: PartitionsHook | None = None,
        max_concurrent: int = 64,
        max_pending: int = 10_000,
        read_count: int = 100,
        fences: Fences | None = None,
        raise_fence: RaiseFence | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``fences``: the tokens of the partitions held here, shared with whatever else acts for their chats;
        ``raise_fence``: takes a partition's next token (None: unfenced, for tests of the bus alone)."""
        self.redis = redis
        self.clock = clock
        self.fences = fences or Fences(partitions, clock.monotonic)
        self.raise_fence = raise_fence
        self.name = name
        self.partitions = partitions
        self.lease_ms = lease_ms
        self.leases = Leases(redis, name, lease_ms)
        self.handler = handler
        self.urgent = urgent
        self.on_urgent = on_urgent
        self.on_acquire = on_acquire
        self.on_release = on_release
        self.max_pending = max_pending
        self.read_count = read_count
        self.owned: set[int] = set()
        """Partitions whose events are handled here."""
        self.readable: set[int] = set()
        """Partitions read for new entries: ``owned`` once what an earlier owner left pending was claimed."""
        self.held: set[int] = set()
        """Partitions whose lease this worker holds: ``owned`` and those being taken over or given up."""
        self._lanes: Lanes[_Entry] = Lanes(self._run, self._finished, workers=max_concurrent)
        self._side: set[asyncio.Task[None]] = set()
        self._acks: Batched[tuple[int, bytes | str, str | None]] = Batched(redis, _add_ack, "acknowledgements")
        self._outstanding: dict[int, int] = {}
        """Entries read per partition and not yet acknowledged (a partition is given up at zero)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._changed = asyncio.Event()
        self._not_reading = asyncio.Event()
        """Clear while an ``XREADGROUP`` is out: a partition given up is released only after it returned (what
        it brought for that partition stays pending here, and the next owner claims it before reading)."""
        self._not_reading.set()
        self._partition_done = asyncio.Event()
        """Set whenever a partition has nothing outstanding any more."""
        self.claimed = 0
        self.renewed_at = clock.monotonic()
        """When the leases were last renewed (or the consumer built): what ``/readyz`` and the metrics watch."""
        self.lost_count = 0

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        for partition in range(self.partitions):
            await ensure_group(self.redis, inbound_stream(partition), GROUP)
        await self._heartbeat()
        await self._balance()
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="bus-read"),
            asyncio.create_task(self._lease_loop(), name="bus-leases"),
            asyncio.create_task(self._balance_loop(), name="bus-balance"),
        ]

    async def stop(self, timeout: float = 30.0) -> None:
        """Read nothing more, finish what was read (up to ``timeout``), then give every partition up."""
        self._stopping = True
        reading, upkeep, balancing = self._tasks or (None, None, None)
        for task in (reading, balancing):
            if task is not None:
                await cancel_and_wait(task)
        await self._lanes.join(timeout)  # the leases are still renewed meanwhile: nobody else starts on these chats
        await self._acks.flushed()
        if upkeep is not None:
            await cancel_and_wait(upkeep)
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

    async def join(self) -> None:
        """Wait until everything read so far was handled."""
        await self._lanes.join()

    @property
    def active_chats(self) -> int:
        return len(self._lanes)

    def lease_state(self) -> LeaseState:
        return LeaseState(
            held=len(self.held), renewal_age_s=self.clock.monotonic() - self.renewed_at, lost=self.lost_count
        )

    def lease_problem(self) -> str | None:
        """Why this worker should not be trusted with traffic now (its leases are not being renewed), or None."""
        age = self.clock.monotonic() - self.renewed_at
        if self._tasks and age > self.lease_ms / 1000:
            return (
                f"the bus partition leases were last renewed {age:.1f} s ago (bus.lease_ms is {self.lease_ms}): "
                "Redis is unreachable or this process stalls; other workers take the partitions over"
            )
        return None

    # -- leases -------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
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

    async def _balance_loop(self) -> None:
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
            await self._lost(lost)

    async def _lost(self, partitions: set[int]) -> None:
        """``partitions`` are no longer ours: nothing more is handled or acknowledged for them here."""
        for partition in partitions:
            self.fences.drop(partition)
        self.lost_count += len(partitions & self.held)
        self.owned -= partitions
        self.readable -= partitions
        self.held -= partitions
        self._changed.set()
        if self.on_release is not None:
            await self.on_release(partitions)

    async def _balance(self) -> None:
        if self._stopping:
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
                self._outstanding[partition] = self._outstanding.get(partition, 0) + 1
                self._lanes.push(chat_key, _Entry(partition, None, None, self.fences.token(partition), work=job))
        for partition in sorted(taken):
            await self._claim(partition)
        self.readable |= taken & self.held
        self._changed.set()

    async def _claim(self, partition: int) -> None:
        """Take over the entries an earlier owner read and did not acknowledge, oldest first."""
        stream = inbound_stream(partition)
        start: Any = "0-0"
        for _ in range(1000):
            reply = await self.redis.xautoclaim(stream, GROUP, self.name, min_idle_time=0, start_id=start, count=500)
            start, entries = reply[0], reply[1]
            for entry_id, fields in entries:
                if fields is None:
                    continue  # trimmed away
                self.claimed += 1
                self._enqueue(partition, entry_id, fields)
            if start in (b"0-0", "0-0") or not entries:
                return

    async def _rescue(self) -> None:
        """Entries of our partitions left pending with another consumer for longer than a lease (it lost the
        lease while it still ran, and read after the hand-over): handled here, once (the inbox guard)."""
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
                    self._enqueue(partition, entry_id, fields)

    async def _give_up(self, partitions: set[int]) -> None:
        """Stop reading ``partitions``, finish what was read from them, then release their leases."""
        self.readable -= partitions
        self.owned -= partitions
        self._changed.set()
        deadline = self.clock.monotonic() + self.lease_ms / 1000
        await self._not_reading.wait()
        while any(self._outstanding.get(p) for p in partitions) and self.clock.monotonic() < deadline:
            self._partition_done.clear()
            if not await self.clock.wait(self._partition_done, max(0.0, deadline - self.clock.monotonic())):
                break
        await self._acks.flushed()
        if self.on_release is not None:
            await self.on_release(partitions)
        self.held -= partitions
        for partition in partitions:
            self.fences.drop(partition)
            await self.leases.release(partition_lease(partition))
        log.info("bus: %s gave partitions %s up", self.name, sorted(partitions))

    # -- reading and handling --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        block = max(50, min(1000, self.lease_ms // 3))
        while True:
            owned = sorted(self.readable)
            if not owned or sum(self._outstanding.values()) >= self.max_pending:
                self._changed.clear()
                await self.clock.wait(self._changed, block / 1000)
                continue
            self._not_reading.clear()
            try:
                replies = await self.redis.xreadgroup(
                    GROUP, self.name, {inbound_stream(p): ">" for p in owned}, count=self.read_count, block=block
                )
                for stream, entries in replies or []:
                    partition = int(text_of(stream).rsplit(":", 1)[1])
                    for entry_id, fields in entries:
                        self._enqueue(partition, entry_id, fields)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("bus: reading failed (retrying): %s", exc)
                await self.clock.sleep(block / 1000)
            finally:
                self._not_reading.set()

    def _enqueue(self, partition: int, entry_id: bytes | str, fields: dict[Any, Any]) -> None:
        try:
            event = decode(fields)
        except ValueError as exc:
            log.error("bus: an entry of partition %d cannot be read and is dropped: %s", partition, exc)
            self._ack_later(partition, entry_id, None)
            return
        self._outstanding[partition] = self._outstanding.get(partition, 0) + 1
        entry = _Entry(partition, entry_id, event, self.fences.token(partition))
        if self.urgent is not None and self.on_urgent is not None and self.urgent(event):
            task = asyncio.ensure_future(self._handle_urgent(entry))
            self._side.add(task)
            task.add_done_callback(self._side.discard)
            return
        self._lanes.push(str(event.chat), entry)

    async def _handle_urgent(self, entry: _Entry) -> None:
        assert self.on_urgent is not None
        try:
            await self._fenced(entry, self.on_urgent)
        except Exception:
            log.exception("unhandled error for chat %s", entry.event.chat if entry.event else "?")
        finally:
            await self._done(entry, ack=entry.handled)

    async def _run(self, _key: str, entry: _Entry) -> None:
        await self._fenced(entry, self.handler)

    async def _fenced(self, entry: _Entry, handler: Handler) -> None:
        """Handle ``entry`` as work of its partition, under the token it was read with; skipped when the partition
        moved while it waited (its new owner claims it)."""
        fence = self._fence(entry)
        if fence is None:
            return
        refused: LeaseLost | None = None
        with fenced(fence):
            try:
                if entry.work is not None:
                    await entry.work()
                else:
                    assert entry.event is not None
                    await handler(entry.event)
            except LeaseLost as exc:
                refused = exc
            finally:
                # Acknowledged even when the handler failed (a bug, logged by the caller): only a refused
                # commit leaves the entry to the partition's next owner.
                entry.handled = refused is None
        if refused is None:
            return
        what = entry.entry_id if entry.work is None else "what was left to recover"
        log.warning("bus: partition %d: %s; its next owner handles %s", entry.partition, refused, what)
        await self._refused(entry.partition, fence.token)

    def _fence(self, entry: _Entry) -> Fence | None:
        if entry.token is None or self.fences.token(entry.partition) != entry.token:
            return None
        if entry.partition not in self.owned and not self._stopping:
            return None
        return self.fences.fence(entry.partition)

    async def _refused(self, partition: int, token: int) -> None:
        """The partition's work was refused under ``token``: if that is still the token here, the lease is gone
        (or believed gone): let the partition go, so its next owner (maybe this worker again, with a new token)
        takes over what was left."""
        if self.fences.token(partition) != token or partition not in self.held:
            return
        await self._lost({partition})
        try:
            await self.leases.release(partition_lease(partition))
        except Exception as exc:
            log.warning("bus: could not release partition %d (it lapses by itself): %s", partition, exc)

    async def _finished(self, entry: _Entry) -> None:
        await self._done(entry, ack=entry.handled)

    async def _done(self, entry: _Entry, *, ack: bool = True) -> None:
        left = self._outstanding.get(entry.partition, 1) - 1
        if left > 0:
            self._outstanding[entry.partition] = left
        else:
            self._outstanding.pop(entry.partition, None)
            self._partition_done.set()
        if ack and entry.entry_id is not None and entry.event is not None:
            self._ack_later(entry.partition, entry.entry_id, str(entry.event.chat))

    def _ack_later(self, partition: int, entry_id: bytes | str, chat: str | None) -> None:
        """Acknowledged with whatever else finishes meanwhile (an entry handled and not yet acknowledged at a crash
        is claimed by the next owner and skipped by the inbox guard)."""
        self._acks.push((partition, entry_id, chat))


def _add_ack(pipe: Any, item: tuple[int, bytes | str, str | None]) -> None:
    partition, entry_id, chat = item
    pipe.xack(inbound_stream(partition), GROUP, entry_id)
    if chat is not None:
        pipe.eval(DECREMENT, 1, QUEUED, chat)
