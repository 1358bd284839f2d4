"""A worker's side of the Redis bus: the partitions it holds, read in order, acknowledged after handling.

Which partitions a worker holds (their leases, shared out among the live workers, taken over and given up) is
:class:`~bot.scale.holding.PartitionHolder`'s; this module reads what is held and hands it on.

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
from dataclasses import dataclass
from typing import Any

from bot.aio import cancel_and_wait
from bot.bus import Handler, Lanes, Urgent
from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import InboundEvent
from bot.fencing import Fence, Fences, LeaseLost, fenced
from bot.ops.metrics import LeaseState
from bot.scale.batched import Batched
from bot.scale.holding import AcquireHook, PartitionHolder, PartitionsHook, RaiseFence, Work
from bot.scale.streams import DECREMENT, GROUP, QUEUED, decode, ensure_group, inbound_stream, partition_lease, text_of

log = logging.getLogger(__name__)


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
        self.name = name
        self.partitions = partitions
        self.lease_ms = lease_ms
        self.holder = PartitionHolder(
            redis,
            name=name,
            partitions=partitions,
            lease_ms=lease_ms,
            fences=self.fences,
            raise_fence=raise_fence,
            on_acquire=on_acquire,
            on_release=on_release,
            clock=clock,
        )
        self.holder.intake = self
        self.handler = handler
        self.urgent = urgent
        self.on_urgent = on_urgent
        self.max_pending = max_pending
        self.read_count = read_count
        self.owned = self.holder.owned
        """Partitions whose events are handled here (the holder's set, changed in place)."""
        self.readable = self.holder.readable
        """Partitions read for new entries (the holder's set)."""
        self.held = self.holder.held
        """Partitions whose lease this worker holds (the holder's set)."""
        self._lanes: Lanes[_Entry] = Lanes(self._run, self._finished, workers=max_concurrent)
        self._side: set[asyncio.Task[None]] = set()
        self._acks: Batched[tuple[int, bytes | str, str | None]] = Batched(redis, _add_ack, "acknowledgements")
        self._outstanding: dict[int, int] = {}
        """Entries read per partition and not yet acknowledged (a partition is given up at zero)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._not_reading = asyncio.Event()
        """Clear while an ``XREADGROUP`` is out: a partition given up is released only after it returned (what
        it brought for that partition stays pending here, and the next owner claims it before reading)."""
        self._not_reading.set()
        self._partition_done = asyncio.Event()
        """Set whenever a partition has nothing outstanding any more."""

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        for partition in range(self.partitions):
            await ensure_group(self.redis, inbound_stream(partition), GROUP)
        await self.holder.start()
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="bus-read"),
            asyncio.create_task(self.holder.lease_loop(), name="bus-leases"),
            asyncio.create_task(self.holder.balance_loop(), name="bus-balance"),
        ]

    async def stop(self, timeout: float = 30.0) -> None:
        """Read nothing more, finish what was read (up to ``timeout``), then give every partition up."""
        self._stopping = self.holder.stopping = True
        reading, upkeep, balancing = self._tasks or (None, None, None)
        for task in (reading, balancing):
            if task is not None:
                await cancel_and_wait(task)
        await self._lanes.join(timeout)  # the leases are still renewed meanwhile: nobody else starts on these chats
        await self._acks.flushed()
        if upkeep is not None:
            await cancel_and_wait(upkeep)
        await self.holder.release_all()

    async def join(self) -> None:
        """Wait until everything read so far was handled."""
        await self._lanes.join()

    @property
    def active_chats(self) -> int:
        return len(self._lanes)

    @property
    def claimed(self) -> int:
        """Entries taken over from other workers."""
        return self.holder.claimed

    def lease_state(self) -> LeaseState:
        holder = self.holder
        return LeaseState(
            held=len(self.held), renewal_age_s=self.clock.monotonic() - holder.renewed_at, lost=holder.lost_count
        )

    def lease_problem(self) -> str | None:
        """Why this worker should not be trusted with traffic now (its leases are not being renewed), or None."""
        age = self.clock.monotonic() - self.holder.renewed_at
        if self._tasks and age > self.lease_ms / 1000:
            return (
                f"the bus partition leases were last renewed {age:.1f} s ago (bus.lease_ms is {self.lease_ms}): "
                "Redis is unreachable or this process stalls; other workers take the partitions over"
            )
        return None

    # -- what the holder hands on ----------------------------------------------------------------

    def push_work(self, partition: int, chat_key: str, work: Work) -> None:
        """Run ``work`` (what an earlier owner left unfinished for ``chat_key``) first in the chat's lane."""
        self._outstanding[partition] = self._outstanding.get(partition, 0) + 1
        self._lanes.push(chat_key, _Entry(partition, None, None, self.fences.token(partition), work=work))

    async def drain(self, partitions: set[int], deadline: float) -> None:
        """Return once what was read from ``partitions`` is finished and acknowledged (or at ``deadline``)."""
        await self._not_reading.wait()
        while any(self._outstanding.get(p) for p in partitions) and self.clock.monotonic() < deadline:
            self._partition_done.clear()
            if not await self.clock.wait(self._partition_done, max(0.0, deadline - self.clock.monotonic())):
                break
        await self._acks.flushed()

    # -- reading and handling --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        block = max(50, min(1000, self.lease_ms // 3))
        while True:
            owned = sorted(self.readable)
            if not owned or sum(self._outstanding.values()) >= self.max_pending:
                changed = self.holder.changed
                changed.clear()
                await self.clock.wait(changed, block / 1000)
                continue
            self._not_reading.clear()
            try:
                replies = await self.redis.xreadgroup(
                    GROUP, self.name, {inbound_stream(p): ">" for p in owned}, count=self.read_count, block=block
                )
                for stream, entries in replies or []:
                    partition = int(text_of(stream).rsplit(":", 1)[1])
                    for entry_id, fields in entries:
                        self.enqueue(partition, entry_id, fields)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("bus: reading failed (retrying): %s", exc)
                await self.clock.sleep(block / 1000)
            finally:
                self._not_reading.set()

    def enqueue(self, partition: int, entry_id: bytes | str, fields: dict[Any, Any]) -> None:
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
        await self.holder.lost({partition})
        try:
            await self.holder.leases.release(partition_lease(partition))
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
