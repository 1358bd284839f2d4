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
import itertools
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agents.messages import Message
from bot.store.rows import InterruptRow, RunRow

log = logging.getLogger(__name__)

V = TypeVar("V")

_MAX_RELOADS = 5


@dataclass(slots=True)
class ChatState:
    """What the gateway keeps in memory per chat key.

    ``messages`` are the newest rows of the chat's history, oldest first, bounded
    by the store's history limit; ``ids`` are their row ids (kept apart so a
    read is one C-level copy).
    """

    messages: deque[Message]
    ids: deque[int]
    last_id: int = 0
    sizes: deque[int] = field(default_factory=deque)
    """``Message.size()`` of each message, computed once (the context window is cut by it)."""
    total: int = 0
    """The sum of ``sizes``: when everything fits, the window needs no walk over the messages."""
    summary: str | None = None
    """The chat's running summary (:mod:`bot.memory.summary`); None: not read yet."""
    summary_upto: int = 0
    """The newest history row the summary covers."""
    covered: int = 0
    """How many of the oldest ``messages`` the summary covers (ids up to ``summary_upto``), and their size below:
    kept as messages come and go, so that neither the window nor the check for a fold walks them (a long chat's
    summarised turns cost ~0.1 ms a message to walk: 15 % of ``bench/gateway.py`` once chats had a summary)."""
    covered_size: int = 0
    media: int = 0
    """How many of ``messages`` carry files: when no more than a model is shown, nothing needs leaving out (a walk
    over the history per run saved: 4 % of ``bench/gateway.py``)."""

    @classmethod
    def loaded(cls, rows: list[tuple[int, Message]], limit: int) -> ChatState:
        sizes = deque((m.size() for _, m in rows), maxlen=limit)
        return cls(
            deque((m for _, m in rows), maxlen=limit),
            deque((i for i, _ in rows), maxlen=limit),
            rows[-1][0] if rows else 0,
            sizes=sizes,
            total=sum(sizes),
            media=sum(1 for _, m in rows[-limit:] if m.media) if limit else 0,
        )

    def window(self, before_id: int, max_chars: int, after_id: int = 0) -> list[Message]:
        """The newest messages with ids below ``before_id`` (and above ``after_id``: the chat's summary covers
        those) that fit in ``max_chars``, starting at a user turn.

        The same cut as :func:`agents.messages.fit_context`, on the cached sizes.
        """
        ids, sizes = self.ids, self.sizes
        end = len(ids)
        later = 0
        while end and ids[end - 1] >= before_id:
            end -= 1
            later += sizes[end]
        first = 0
        if after_id and ids and ids[0] <= after_id:
            if after_id == self.summary_upto and self.covered <= end:
                first = self.covered  # the summary's turns, counted as they came and went
                later += self.covered_size
            while first < end and ids[first] <= after_id:
                later += sizes[first]
                first += 1
        if self.total - later <= max_chars:
            start = first  # all of it fits: the common case, no walk
        else:
            total, start = 0, end
            for i in range(end - 1, first - 1, -1):  # newest first; a deque indexes its ends in O(1)
                total += sizes[i]
                if total > max_chars and start < end:
                    break
                start = i
        messages = self.messages
        while start < end and messages[start].role != "user":
            start += 1
        return _between(messages, start, end)

    def add(self, row_id: int, message: Message) -> None:
        # Ids grow in commit order (one writer), so an id at or below the last one
        # is a row the load already saw.
        if row_id > self.last_id:
            sizes = self.sizes
            if sizes.maxlen is not None and len(sizes) == sizes.maxlen:
                self.total -= sizes[0]  # the oldest leaves the bounded deques
                if self.covered:
                    self.covered -= 1
                    self.covered_size -= sizes[0]
                if self.messages[0].media:
                    self.media -= 1
            if message.media:
                self.media += 1
            size = message.size()
            self.messages.append(message)
            self.ids.append(row_id)
            sizes.append(size)
            self.total += size
            self.last_id = row_id

    def summarised(self, summary: str, upto_id: int) -> None:
        """The chat's summary is ``summary`` now, covering the rows up to ``upto_id``."""
        self.summary, self.summary_upto = summary, upto_id
        count = size = 0
        for row_id, row_size in zip(self.ids, self.sizes, strict=True):
            if row_id > upto_id:
                break
            count += 1
            size += row_size
        self.covered, self.covered_size = count, size

    def clear(self) -> None:
        self.messages.clear()
        self.ids.clear()
        self.sizes.clear()
        self.total = 0
        self.media = 0
        self.summary = None
        self.covered = self.covered_size = 0
        # SQLite may reuse the ids of deleted rows, so the next id may be smaller.
        self.last_id = 0

    def newest(self, n: int) -> list[Message]:
        if n >= len(self.messages):
            return list(self.messages)
        return list(itertools.islice(self.messages, len(self.messages) - n, None))


_TRIMMED = 48
"""At most this many messages outside a window are copied with it and then dropped (see :func:`_between`)."""


def _between(messages: deque[Message], start: int, end: int) -> list[Message]:
    """``messages[start:end]`` as a list.

    Every message copied is a cache miss on a long chat's cold history (its reference count is touched), and a
    list made from an ``islice`` grows as it fills: ``list(islice(messages, start, end))`` also walked the
    ``start`` messages before the window.  The whole deque copied at its known length, with the few left out
    dropped, costs 5.3 µs less a window of a 109-message chat (22.5 -> 15.8 µs with the runner's copy of it;
    9.2 less at 200 messages), and a window after a summary covering 100 or 150 of 200 messages, copied from
    the right end (only its own messages are touched), 2.2 and 5.3 less (cold caches: 200 chats in turn,
    medians of 8 interleaved passes, same process).
    """
    n = len(messages)
    if start + n - end <= _TRIMMED:
        out = list(messages)
        del out[end:]
        del out[:start]
        return out
    out = list(itertools.islice(reversed(messages), n - end, n - start))
    out.reverse()
    return out


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

    What it saves (``bench/gateway.py --cache-chats 1`` vs the default 1,000, 200 chats, two pairs back to
    back): 1,601-1,665 vs 614-714 msg/s, p50 2.9-3.6 vs 4.8-5.3 ms; 606 reads in a run vs 34,000-39,000 (every
    message reads history, settings and its pending interrupt without it).
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
        partitions, and any process may change them; they follow announced changes, :mod:`bot.store.settings`.)"""
        self.history.drop(which)
        self.pending.drop(which)
        self.paused.drop(lambda _run_id, kept: which(kept[0].chat_key))
        self.ledgers.drop(lambda _run_id, known: which(known.chat_key))
