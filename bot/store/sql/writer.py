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

Held inserts: the intake's insert of an inbound event that this process handles
at once waits aside (:meth:`GroupCommit.hold`) for two turns of the event loop.
When the handler's first write (the event marked handled, the person's message,
the run's row) comes in that time, it takes the insert with it
(:meth:`GroupCommit.submit_handling`): one write and one commit instead of two,
and the platform is still told "received" only once the row is durable.  An
insert nobody takes is queued like any write; under load a batch is in flight
for longer than two turns anyway, so it waits for no commit more than it would
have.  If that insert fails, the handler's write is not made either
(:class:`~bot.store.base.EventNotStored`): what the platform was told is not
stored is never handled.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from bot.store.base import EventNotStored, StoreError, StoreUnavailable
from bot.store.sql.ops import MARK_HANDLED, RECEIVE_HANDLED, OnCommit, Step, Write, WriteResult
from bot.store.sql.retention import Retention

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
        self._held: dict[str, _Held] = {}
        """Inbound events' inserts waiting for their handler's first write (see the module docstring)."""
        self._released: dict[str, asyncio.Future[WriteResult]] = {}
        """Held inserts queued on their own (nobody claimed them) and not known to be committed: the handler's
        write waits for its event's insert first (see :meth:`submit_handling`)."""
        self.merges_receipt = False
        """A carried insert and the mark of its event as handled may be one statement (:data:`RECEIVE_HANDLED`;
        the SQLite writer: a statement less for each event handled at once)."""
        self._age = 0
        """Turns of the loop counted while inserts are held (each held insert remembers the count it came at)."""
        self._aging = False

    def submit(
        self,
        steps: Sequence[Step],
        *,
        on_commit: OnCommit | None = None,
        grows: str | None = None,
        events: int = 0,
        prune: bool = False,
        first: bool = False,
        receipt: asyncio.Future[WriteResult] | None = None,
        merged: bool = False,
    ) -> asyncio.Future[WriteResult]:
        """Queue a write; the future resolves after its batch committed.

        ``first``: ahead of everything queued, in a small batch of its own (see :meth:`submit_unwaited`).
        ``receipt``: a claimed insert's waiter (:attr:`Write.receipt <bot.store.sql.ops.Write.receipt>`); the insert
        is the first of ``steps`` (``merged``: that insert and the event's mark as handled, :data:`RECEIVE_HANDLED`).
        """
        if self._closed or self._loop is None:
            raise StoreError("the store is not open")
        future: asyncio.Future[WriteResult] = self._loop.create_future()
        write = Write(steps, future, on_commit, grows, events, prune, first=first, receipt=receipt, merged=merged)
        self._enqueue(write, first=first)
        return future

    async def submit_handling(
        self,
        key: str,
        steps: Sequence[Step],
        *,
        on_commit: OnCommit | None = None,
        grows: str | None = None,
        events: int = 0,
    ) -> WriteResult:
        """:meth:`submit` ``steps`` that mark the inbound event ``key`` handled, and wait: with the event's held
        insert when it is still held; after it when it went on its own.  :class:`EventNotStored` when that insert
        failed (then nothing here was written either)."""
        held = self._held.pop(key, None)
        if held is None:
            insert = self._released.pop(key, None)
            if insert is not None:
                try:  # nothing that assumes the event is stored commits before it
                    await asyncio.shield(insert)
                except StoreError as exc:
                    raise EventNotStored(f"the event {key} was not stored: {exc}") from exc
            return await self.submit(steps, on_commit=on_commit, grows=grows, events=events)
        try:
            if self.merges_receipt and steps and steps[0].sql == MARK_HANDLED and steps[0].params[0] == key:
                # The write marks this very event first: the insert and the mark are one statement.
                key_, chat_key, kind, _event, at = held.step.params
                merged = Step(RECEIVE_HANDLED, (key_, chat_key, kind, at, at), guard=True, returning=True)
                return await self.submit(
                    (merged, *steps[1:]),
                    on_commit=on_commit,
                    grows=grows,
                    events=events,
                    receipt=held.future,
                    merged=True,
                )
            # Not a guard here: a row stored before (a redelivery) stops nothing; the steps' own guard decides.
            carried = Step(held.step.sql, held.step.params)
            return await self.submit(
                (carried, *steps), on_commit=on_commit, grows=grows, events=events, receipt=held.future
            )
        except StoreError as exc:
            raise EventNotStored(f"the event {key} was not stored: {exc}") from exc

    def hold(self, key: str, step: Step) -> asyncio.Future[WriteResult]:
        """Keep the insert ``step`` of the inbound event ``key`` aside for two turns of the loop, for its
        handler's first write to take (:meth:`submit_handling`); then queue it like :meth:`submit` (one event
        counted).  The future resolves once the row is committed, whichever write carried it: ``ok`` when the row
        is new."""
        if self._closed or self._loop is None:
            raise StoreError("the store is not open")
        if key in self._held:  # the same event twice at once: the second goes its own way
            return self.submit((step,), events=1)
        self._released.pop(key, None)  # an earlier delivery's, whose handler is gone
        future: asyncio.Future[WriteResult] = self._loop.create_future()
        at_batch = self._forming()
        self._held[key] = _Held(step, future, self._age, at_batch)
        if not at_batch and not self._aging:
            self._aging = True
            self._loop.call_soon(self._turned)
        return future

    def _forming(self) -> bool:
        """Whether a batch is in flight, so the next one forms when it commits (and takes the held inserts then:
        :meth:`_take_held`); otherwise held inserts wait two turns of the loop."""
        return False

    def _take_held(self) -> None:
        """The next batch forms now: the inserts held while the last one was in flight join it (the batch they
        would have joined had they not been held), unless their handler took them meanwhile."""
        for key in [key for key, item in self._held.items() if item.at_batch]:
            self._release(key, self._held.pop(key))

    def handled(self, key: str) -> None:
        """The handler of the event ``key`` is done: its insert, if still held (a handler that wrote nothing), is
        queued now, and nothing is kept for the event."""
        held = self._held.pop(key, None)
        if held is not None:
            self._enqueue(Write((held.step,), held.future, events=1))
        self._released.pop(key, None)

    def release_held(self) -> None:
        """Queue every held insert now (before a flush or a close)."""
        held, self._held = self._held, {}
        for key, item in held.items():
            self._release(key, item)

    def _release(self, key: str, item: _Held) -> None:
        self._enqueue(Write((item.step,), item.future, events=1))
        self._released[key] = item.future
        item.future.add_done_callback(lambda done: self._settled(key, done))
        while len(self._released) > _KEEP_RELEASED:  # failures nobody asked about (their events went elsewhere)
            del self._released[next(iter(self._released))]

    def _settled(self, key: str, done: asyncio.Future[WriteResult]) -> None:
        if not done.cancelled() and done.exception() is None and self._released.get(key) is done:
            del self._released[key]  # committed: nothing to wait for

    def _turned(self) -> None:
        """One turn after a hold: inserts held until now ripen at the end of the next turn.

        Two turns, not one: the hold's own turn scheduled this callback before the bus woke the handler, so the
        handler runs in the turn this callback runs in, and only the next turn knows whether it claimed."""
        self._age += 1
        assert self._loop is not None
        self._loop.call_soon(self._ripen, self._age)

    def _ripen(self, age: int) -> None:
        self._aging = False
        ripe = [key for key, item in self._held.items() if item.age < age and not item.at_batch]
        for key in ripe:
            self._release(key, self._held.pop(key))
        if any(not item.at_batch for item in self._held.values()):
            self._aging = True
            assert self._loop is not None
            self._loop.call_soon(self._turned)

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
        for i, write in enumerate(writes):
            receipt = write.receipt
            if receipt is None:
                continue
            if results is not None:
                result = results[i]
                if write.merged:  # the first step's row, when it returned one, says whether the row is new
                    new = bool(result.counts) and result.counts[0] == 1 and bool(result.rows[0][0])
                    if result.counts and result.counts[0]:
                        del result.rows[:1]  # the mark's count stays; its row is not the write's own
                else:
                    new = bool(result.counts) and result.counts[0] == 1
                    del result.counts[:1]  # the write's own steps, as if the insert had not ridden along
                if not receipt.done():
                    receipt.set_result(WriteResult(ok=new))
            elif not receipt.done():
                receipt.set_exception(_store_error(error))
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


_KEEP_RELEASED = 4096


async def ok_of(future: asyncio.Future[WriteResult]) -> bool:
    """Whether the write ``future`` stands for went through (a held insert: made a new row); a cancelled caller
    leaves the future to the others waiting on it."""
    return (await asyncio.shield(future)).ok


@dataclass(slots=True)
class _Held:
    step: Step
    future: asyncio.Future[WriteResult]
    age: int
    at_batch: bool
    """Held while a batch was in flight: released when the next one forms, not after two turns."""


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
