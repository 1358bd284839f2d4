"""Write-through caches, so the per-message path never reads the database.

A cache entry is loaded once (on the store's read path) and then kept equal to
the database by applying every committed write to it, in commit order, on the
event loop.  Entries are bounded by count (least recently used goes first).

The one race: a load reads the database while a write for the same key
commits.  A commit that lands while the key is loading marks the load stale
and it is repeated, so a load never misses a commit; a commit whose callback
runs after the load was installed is applied on top, so every change must be
idempotent (history rows carry their ids and are added once).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from bot.store.chat_state import ChatState
from bot.store.rows import InterruptRow, RunRow

__all__ = ["CachedMap", "ChatState", "ChatStateCache", "KnownLedger", "Lru", "PendingSlot"]

log = logging.getLogger(__name__)

V = TypeVar("V")

_MAX_RELOADS = 5


class Lru(Generic[V]):
    """A dict bounded by count that forgets the least recently used key."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._data: OrderedDict[str, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def get(self, key: str) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def peek(self, key: str) -> V | None:
        return self._data.get(key)

    def put(self, key: str, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def pop(self, key: str) -> V | None:
        """Remove ``key``; its value, or None."""
        return self._data.pop(key, None)

    def drop(self, which: Callable[[str, V], bool]) -> int:
        """Remove every entry ``which`` selects; how many went."""
        gone = [key for key, value in self._data.items() if which(key, value)]
        for key in gone:
            del self._data[key]
        return len(gone)


class CachedMap(Generic[V]):
    """An :class:`Lru` filled by ``load`` on a miss and updated by :meth:`committed`."""

    def __init__(self, capacity: int, load: Callable[[str], Awaitable[V]]) -> None:
        self.lru: Lru[V] = Lru(capacity)
        self._load = load
        self._loads: dict[str, asyncio.Future[V]] = {}
        self._stale: set[str] = set()
        self.misses = 0

    async def get(self, key: str) -> V:
        value = self.lru.get(key)
        if value is not None:
            return value
        pending = self._loads.get(key)
        if pending is None:
            # One load per key, shared by every caller; a caller's cancellation
            # must not cancel the others' load.
            pending = self._loads[key] = asyncio.ensure_future(self._fresh(key))
            pending.add_done_callback(lambda done: self._loaded(key, done))
        return await asyncio.shield(pending)

    def _loaded(self, key: str, done: asyncio.Future[V]) -> None:
        if self._loads.get(key) is done:
            del self._loads[key]

    async def _fresh(self, key: str) -> V:
        self.misses += 1
        for _ in range(_MAX_RELOADS):
            self._stale.discard(key)
            value = await self._load(key)
            if key not in self._stale:
                self.lru.put(key, value)
                return value
        # The key changes faster than it loads: answer without caching it.
        self._stale.discard(key)
        log.debug("cache: %s kept changing while loading; not cached", key)
        return value

    def drop(self, which: Callable[[str], bool]) -> None:
        """Forget the keys ``which`` selects (another process may have changed them); loads running now
        for them are loaded again."""
        self.lru.drop(lambda key, _value: which(key))
        self._stale.update(key for key in self._loads if which(key))

    def committed(self, key: str, apply: Callable[[V], None]) -> None:
        """A write of ``key`` committed: update the cached value (or void a running load)."""
        value = self.lru.peek(key)
        if value is not None:
            apply(value)
        elif key in self._loads:
            self._stale.add(key)


@dataclass(slots=True)
class KnownLedger:
    """A run's tool-ledger rows as this process wrote them: every one of them, since the run started here (its
    rows as stored: ``call_id -> (name, status, result JSON, args JSON)``)."""

    chat_key: str
    rows: dict[str, tuple[str, str, str | None, str | None]] = field(default_factory=dict)


@dataclass(slots=True)
class PendingSlot:
    """A chat's pending interrupt (None: it has none), as a cache value (None means "not loaded" to a map)."""

    row: InterruptRow | None


class ChatStateCache:
    """Every per-chat cache of the store, in one place, so the per-message path reads no database.

    ``history``: the chat's newest history rows; ``settings``: a settings key's settings; ``pending``: the
    chat's pending interrupt; ``paused``: runs this process paused, by run id, with the checkpoint as committed
    (a press resumes without a read); ``ledgers``: the tool ledgers of runs this process started, by run id (a
    resumed run asks its ledger without a read).  Each is write-through (committed writes are applied in commit
    order) and bounded by ``capacity`` chats.  Valid only while this process owns the chats: when a partition
    moves to or from this worker, :meth:`forget` drops its chats (another process may write them meanwhile).

    Without it every message reads its history, settings and pending interrupt: ``bench/gateway.py
    --cache-chats 1`` against the default measures what it saves (see bench/README.md, "The store's caches").
    """

    def __init__(
        self,
        capacity: int,
        *,
        history: Callable[[str], Awaitable[ChatState]],
        settings: Callable[[str], Awaitable[dict[str, Any]]],
        pending: Callable[[str], Awaitable[PendingSlot]],
    ) -> None:
        self.history: CachedMap[ChatState] = CachedMap(capacity, history)
        self.settings: CachedMap[dict[str, Any]] = CachedMap(capacity, settings)
        self.pending: CachedMap[PendingSlot] = CachedMap(capacity, pending)
        self.paused: Lru[tuple[RunRow, str]] = Lru(capacity)
        self.ledgers: Lru[KnownLedger] = Lru(capacity)

    def forget(self, which: Callable[[str], bool]) -> None:
        """Drop what is cached of the chats ``which`` selects.  (Settings are not: their keys span chats of several
        partitions, and any process may change them; they follow announced changes, :mod:`bot.store.sql.settings`.)"""
        self.history.drop(which)
        self.pending.drop(which)
        self.paused.drop(lambda _run_id, kept: which(kept[0].chat_key))
        self.ledgers.drop(lambda _run_id, known: which(known.chat_key))
