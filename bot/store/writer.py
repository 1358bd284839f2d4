"""Group commit: one writer turns the writes of many chats into few transactions.

Callers :meth:`GroupCommit.submit` a write and await its future.  The writer
takes everything queued (up to ``max_batch``), runs it in ONE transaction and
commits; only then are the futures resolved, so an acknowledged write is
durable.  A failed statement or commit rolls the whole batch back and fails
every waiter of that batch with :class:`StoreError`.  While a batch commits,
new writes queue up and form the next batch: the busier the gateway, the more
writes share one fsync.

The backends (SQLite on a thread, PostgreSQL on an asyncio task) supply the
queue and the transaction; this module holds what they share.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from bot.store.base import StoreError
from bot.store.ops import OnCommit, Step, Write, WriteResult
from bot.store.retention import Retention

log = logging.getLogger(__name__)


@dataclass
class WriterStats:
    """Counters for tests, the benchmark and (later) metrics."""

    writes: int = 0
    commits: int = 0
    failed_batches: int = 0
    largest_batch: int = 0
    retention_passes: int = 0
    checkpoints: int = 0
    """WAL checkpoints taken beside the writer (SQLite)."""
    wal_resets: int = 0
    """Checkpoints the writer finished, after which the WAL starts over (SQLite)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class GroupCommit(abc.ABC):
    """The queue-facing half of a writer; subclasses run the batches."""

    def __init__(self, retention: Retention, max_batch: int = 256) -> None:
        self.retention = retention
        self.max_batch = max(1, max_batch)
        self.stats = WriterStats()
        self.timer: Callable[[float], None] | None = None
        """Told how long each batch took to commit, in seconds (a metric; called on the writer's thread)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = True

    def submit(
        self,
        steps: Sequence[Step],
        *,
        on_commit: OnCommit | None = None,
        grows: str | None = None,
        events: int = 0,
        prune: bool = False,
        first: bool = False,
    ) -> asyncio.Future[WriteResult]:
        """Queue a write; the future resolves after its batch committed.

        ``first``: ahead of everything queued, in a small batch of its own (see :meth:`submit_unwaited`).
        """
        if self._closed or self._loop is None:
            raise StoreError("the store is not open")
        future: asyncio.Future[WriteResult] = self._loop.create_future()
        self._enqueue(Write(steps, future, on_commit, grows, events, prune, first=first), first=first)
        return future

    def submit_unwaited(self, steps: Sequence[Step], what: str, *, first: bool = False) -> None:
        """Queue a write nobody waits on: no future; a failure is logged as ``what`` failed.

        ``first``: ahead of everything queued (it must only touch rows that are committed already).
        """
        if self._closed or self._loop is None:
            raise StoreError("the store is not open")
        self._enqueue(Write(steps, None, what=what, first=first), first=first)

    @abc.abstractmethod
    def _enqueue(self, write: Write, *, first: bool = False) -> None: ...

    @abc.abstractmethod
    async def open(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None:
        """Commit everything queued so far, then stop."""

    # -- shared by the backends -------------------------------------------------

    def _split(self, batch: list[Write]) -> tuple[list[Write], list[Write]]:
        writes = [w for w in batch if not w.prune]
        return writes, [w for w in batch if w.prune]

    def _booked(self, writes: list[Write], results: list[WriteResult] | None, started: float | None = None) -> None:
        """Book a batch's outcome on the writer side (before the loop hears of it); ``started``: its
        ``perf_counter`` when the batch's transaction began."""
        if started is not None and self.timer is not None and results is not None:
            self.timer(time.perf_counter() - started)
        self.stats.writes += len(writes)
        self.stats.largest_batch = max(self.stats.largest_batch, len(writes))
        if results is None:
            self.stats.failed_batches += 1
            return
        for write, result in zip(writes, results, strict=True):
            self.retention.note(write, result)

    def _resolve(self, writes: list[Write], results: list[WriteResult] | None, error: BaseException | None) -> None:
        """On the event loop: update the caches, then wake the waiters."""
        if results is not None:
            for write, result in zip(writes, results, strict=True):
                if write.on_commit is not None:
                    try:
                        write.on_commit(result)
                    except Exception:
                        log.exception("store: a post-commit callback failed")
        for i, write in enumerate(writes):
            future = write.future
            if future is None:
                if results is None:
                    log.error("store: %s failed: %s", write.what, _store_error(error))
                elif not results[i].ok:
                    log.error("store: %s was not applied", write.what)
            elif future.done():  # the waiter was cancelled; the write still counts
                continue
            elif results is not None:
                future.set_result(results[i])
            else:
                future.set_exception(_store_error(error))


class StoreUnavailable(StoreError):
    """The database could not take the write *now*: the disk is full, the file is locked, the server is gone or
    short of resources.  Nothing was committed, and the same write may well succeed later (a caller that can wait
    retries it); any other :class:`StoreError` may be the write's own fault (a constraint, bad data)."""


_SQLITE_TRANSIENT = frozenset({5, 6, 7, 10, 13, 14, 15})
"""SQLite primary result codes of a database that cannot take a write now: BUSY, LOCKED, NOMEM, IOERR, FULL
("database or disk is full"), CANTOPEN, PROTOCOL."""
_PG_TRANSIENT_CLASSES = ("08", "40", "53", "57", "58")
"""SQLSTATE classes of the same for PostgreSQL: connection exception, transaction rollback (deadlock,
serialization), insufficient resources (``53100`` disk full), operator intervention (shutdown), system error."""
_PG_TRANSIENT_STATES = frozenset({"55P03"})
"""``lock_not_available``: ``lock_timeout`` (``store.busy_timeout_ms``) ran out."""


def transient(error: BaseException | None) -> bool:
    """Whether ``error`` (what a batch raised) says the database cannot take writes now, rather than that a write
    is wrong: the classification behind :class:`StoreUnavailable`."""
    if error is None:
        return False
    if isinstance(error, StoreUnavailable):
        return True
    if isinstance(error, StoreError):
        return transient(error.__cause__)
    if isinstance(error, OSError | TimeoutError):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_TRANSIENT
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str):
        return state in _PG_TRANSIENT_STATES or state.startswith(_PG_TRANSIENT_CLASSES)
    # asyncpg's InterfaceError and friends ("connection is closed") carry no SQLSTATE.
    return type(error).__name__ in ("InterfaceError", "ConnectionDoesNotExistError", "ConnectionFailureError")


def _store_error(error: BaseException | None) -> StoreError:
    if isinstance(error, StoreError):
        return error
    detail = f"{error.__class__.__name__}: {error}" if error is not None else "unknown error"
    kind = StoreUnavailable if transient(error) else StoreError
    failure = kind(f"the database did not commit the write ({detail})")
    failure.__cause__ = error
    return failure
