"""The inbound bus: per-chat ordering, cross-chat concurrency, backpressure.

Events of one chat key are handled one at a time in arrival order; different
chats run concurrently under ``max_concurrent`` handlers.  At most
``max_pending`` events are queued or in flight; a producer past that waits
(nothing is dropped).  A chat's queue exists only while it has work, so a
million distinct chats leave nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from bot.events import InboundEvent

log = logging.getLogger(__name__)

Handler = Callable[[InboundEvent], Awaitable[None]]


Urgent = Callable[[InboundEvent], bool]


class Bus(Protocol):
    """Carries inbound events from channel adapters to the supervisor.

    Urgent events (``/cancel`` while a run is busy: the predicate the bus is built with) skip the chat's queue
    and go to ``on_urgent`` at once.
    """

    def subscribe(self, handler: Handler, *, on_urgent: Handler | None = None) -> None: ...

    async def publish(self, event: InboundEvent) -> None: ...

    async def queued(self, chat_key: str) -> int:
        """Events of ``chat_key`` waiting or in flight (the intake bounds each chat by it)."""

    def starts_now(self, chat_key: str) -> bool:
        """Whether an event of ``chat_key`` published now would be handled here at once: its chat has nothing
        queued and a worker is free (the intake then lets the handler's first write carry the event's row)."""

    async def join(self) -> None:
        """Wait until every event published so far was handled (here)."""

    @property
    def active_chats(self) -> int:
        """Chats with work on the bus (for health and metrics)."""

    async def depths(self) -> dict[int, tuple[int, float]]:
        """Per partition: events waiting or being handled, and the age in seconds of the oldest (metrics)."""

    async def close(self, timeout: float | None = None) -> None: ...


class BusClosed(RuntimeError):
    """The bus no longer accepts events (the gateway is shutting down)."""


class BusUnavailable(RuntimeError):
    """The bus could not take the event now (Redis unreachable): the platform must deliver it again."""


T = TypeVar("T")


class Lanes(Generic[T]):
    """Work per chat key: each key's items are run one at a time in arrival order, keys concurrently.

    A key's queue exists only while it has work, so a million distinct chats leave nothing behind.
    ``run`` handles one item and should not raise (what it raises is logged: one bad item cannot stop the
    chat's queue); ``done`` is called after each item, whatever happened.

    ``workers``: at most this many items run at once. Keys with work wait in arrival order, and a key goes
    back to the end of that line after each of its items, so a busy chat cannot keep a worker from the others.
    A worker takes the next key itself when its item is done; it ends when no key waits. That spares a task and a
    semaphore hand-off per item, nearly half the bus's time on the event loop (see bench/README.md, "The bus's
    workers"). None: a task per key while it has work, unbounded.
    """

    def __init__(
        self,
        run: Callable[[str, T], Awaitable[None]],
        done: Callable[[T], Awaitable[None] | None],
        *,
        workers: int | None = None,
    ) -> None:
        self._run = run
        self._done = done
        self._queues: dict[str, deque[T]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        """Per key (``workers`` None): the task draining it."""
        self._limit = workers
        self._ready: deque[str] = deque()
        """Keys with work and no worker, in the order they get one (``workers`` set)."""
        self._pool: set[asyncio.Task[None]] = set()
        self._working = 0
        """Pooled workers running (counted down by the worker itself: its task's done callback comes later)."""
        self._idle = asyncio.Event()
        self._idle.set()

    def push(self, key: str, item: T) -> None:
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(item)  # the key has work: its worker, or the line of waiting keys, has it
            return
        self._queues[key] = queue = deque((item,))
        self._idle.clear()
        limit = self._limit
        if limit is None:
            self._workers[key] = asyncio.create_task(self._drain(key, queue), name=f"chat:{key}")
            return
        self._ready.append(key)
        if self._working < limit:
            self._working += 1
            task = asyncio.create_task(self._work(), name="lanes-worker")
            self._pool.add(task)
            task.add_done_callback(self._pool.discard)

    def queued(self, key: str) -> int:
        queue = self._queues.get(key)
        return len(queue) if queue is not None else 0

    def starts_now(self, key: str) -> bool:
        """Whether an item of ``key`` pushed now starts at once (nothing of the key queued, a worker free)."""
        return key not in self._queues and (self._limit is None or self._working < self._limit)

    def __len__(self) -> int:
        """Keys with queued or running work."""
        return len(self._queues)

    def items(self) -> tuple[int, list[T]]:
        """How many items are queued or running, and each key's first (the oldest of each key)."""
        return sum(len(q) for q in self._queues.values()), [q[0] for q in self._queues.values() if q]

    async def _one(self, key: str, queue: deque[T]) -> None:
        """Run the key's first item, then take it off its queue."""
        item = queue[0]
        try:
            await self._run(key, item)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The supervisor reports run errors to the user itself; this is a bug in the
            # handler, logged so one bad event cannot stop the chat's queue.
            log.exception("unhandled error for chat %s", key)
        finally:
            queue.popleft()
            pending = self._done(item)
            if pending is not None:
                await pending

    def _emptied(self, key: str) -> None:
        del self._queues[key]
        if not self._queues:
            self._idle.set()

    async def _drain(self, key: str, queue: deque[T]) -> None:
        try:
            while queue:
                await self._one(key, queue)
        finally:
            del self._workers[key]
            self._emptied(key)

    async def _work(self) -> None:
        """A pooled worker: one item of the first waiting key, then that key to the back of the line."""
        ready, queues = self._ready, self._queues
        try:
            while ready:
                key = ready.popleft()
                queue = queues[key]
                try:
                    await self._one(key, queue)
                finally:
                    if queue:
                        ready.append(key)
                    else:
                        self._emptied(key)
        finally:
            self._working -= 1

    async def join(self, timeout: float | None = None) -> None:
        """Wait until every item pushed so far was run; after ``timeout``, cancel what is left."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            tasks = [*self._workers.values(), *self._pool]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


class InMemoryBus:
    """A single-process :class:`Bus`."""

    def __init__(self, *, max_concurrent: int = 64, max_pending: int = 10_000, urgent: Urgent | None = None) -> None:
        """``urgent``: which events skip their chat's queue (a port, e.g. the chats' busy registry)."""
        self._handler: Handler | None = None
        self._urgent = urgent
        self._on_urgent: Handler | None = None
        self._side: set[asyncio.Task[None]] = set()
        self._room = asyncio.Semaphore(max_pending)
        self._lanes: Lanes[InboundEvent] = Lanes(self._run, self._release, workers=max_concurrent)
        self._closed = False

    def subscribe(self, handler: Handler, *, on_urgent: Handler | None = None) -> None:
        self._handler = handler
        self._on_urgent = on_urgent

    async def queued(self, chat_key: str) -> int:
        return self._lanes.queued(chat_key)

    def starts_now(self, chat_key: str) -> bool:
        return not self._closed and self._lanes.starts_now(chat_key)

    @property
    def active_chats(self) -> int:
        """Chats with queued or running work (for tests and metrics)."""
        return len(self._lanes)

    async def publish(self, event: InboundEvent) -> None:
        if self._closed:
            raise BusClosed("the bus is closed")
        if self._handler is None:
            raise RuntimeError("no handler subscribed to the bus")
        if self._urgent is not None and self._on_urgent is not None and self._urgent(event):
            task: asyncio.Task[None] = asyncio.ensure_future(self._on_urgent(event))
            self._side.add(task)
            task.add_done_callback(self._side.discard)
            return
        await self._room.acquire()
        self._lanes.push(str(event.chat), event)

    async def depths(self) -> dict[int, tuple[int, float]]:
        """One partition (this process): the events queued or being handled and the oldest one's age."""
        count, heads = self._lanes.items()
        now = time.time()
        oldest = min((e.received_at.timestamp() for e in heads), default=now)
        return {0: (count, max(0.0, now - oldest))}

    async def _run(self, _key: str, event: InboundEvent) -> None:
        assert self._handler is not None
        await self._handler(event)

    def _release(self, _event: InboundEvent) -> None:
        self._room.release()

    async def join(self) -> None:
        """Wait until every queued event was handled."""
        await self._lanes.join()

    async def close(self, timeout: float | None = None) -> None:
        """Stop accepting events and let in-flight work finish (cancelled after ``timeout``)."""
        self._closed = True
        await self._lanes.join(timeout)
