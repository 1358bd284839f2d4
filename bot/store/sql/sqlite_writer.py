"""The single SQLite writer behind the store: raw ``sqlite3``, statements on the event loop, the fsync on a thread.

A commit is mostly the fsync and a statement a little C, but every hop between the event loop and a worker thread
costs more than either, and a worker thread that runs Python waits for the GIL behind the busy loop (measured: see
bench/README.md, "The SQLite writer").  So a batch's statements run on the event loop, inside ``BEGIN IMMEDIATE``,
and only the ``COMMIT`` goes to the committer thread (``sqlite3`` releases the GIL for it), which hands the results
back with ONE ``call_soon_threadsafe`` per batch.  The event loop never waits for the fsync, and writes queued
meanwhile form the next batch.  A lock held by another connection never blocks the loop: that batch runs whole on
the thread, which waits up to ``busy_timeout``.

Its connection's pragmas: :mod:`bot.store.sql.sqlite`; the WAL checkpoints beside it:
:mod:`bot.store.sql.sqlite_checkpoints`; the reads: :mod:`bot.store.sql.sqlite_reader`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.base import StoreError
from bot.store.sql.ops import COUNT_EVENTS, ROWID_INSERTS, Step, Write, WriteResult
from bot.store.sql.retention import Retention
from bot.store.sql.sqlite import writer_connection
from bot.store.sql.sqlite_checkpoints import WalCheckpoints
from bot.store.sql.writer import GroupCommit

log = logging.getLogger(__name__)


class SqliteWriter(GroupCommit):
    """The single SQLite writer: one connection, statements on the loop, the fsync on a thread.

    A batch's statements run on the event loop: they are in-memory work of a few
    µs each, and running them there spares a thread hop (and a wait for the GIL)
    per statement, which cost more than the statements.  Only ``COMMIT`` (the
    fsync) and retention passes go to the committer thread; one batch is in
    flight at a time, and writes queued meanwhile form the next.  ``BEGIN
    IMMEDIATE`` is tried on the loop without waiting: when another connection
    holds the lock, the whole batch goes to the thread, which waits up to
    ``busy_timeout``, so the loop never blocks on a lock.
    """

    def __init__(
        self, path: str, *, synchronous: str, busy_timeout_ms: int, retention: Retention, max_batch: int = 256
    ) -> None:
        super().__init__(retention, max_batch)
        self.merges_receipt = True
        self.path = path
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._pending: list[Write] = []
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._busy = False
        """A batch is in flight: the connection belongs to the committer thread until it hands it back."""
        self._kick_scheduled = False
        self._idle: asyncio.Event | None = None
        self._conn: sqlite3.Connection | None = None
        self._cursor: sqlite3.Cursor | None = None
        """The cursor of every write's statements (``conn.execute`` makes a new cursor each time; measured: see
        bench/README.md, "Per-message micro-optimisations")."""
        self._thread: threading.Thread | None = None
        self._checkpoints = WalCheckpoints(
            path, synchronous=self.synchronous, busy_timeout_ms=busy_timeout_ms, stats=self.stats
        )

    async def open(self) -> None:
        try:
            conn = writer_connection(self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms)
            self.retention.event_count = conn.execute(COUNT_EVENTS).fetchone()[0]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        self._conn = conn
        self._cursor = conn.cursor()
        self._loop = asyncio.get_running_loop()
        self._idle = asyncio.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._main, name="store-writer", daemon=True)
        self._thread.start()
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self.release_held()
        self._closed = True
        assert self._idle is not None
        while self._pending or self._busy:  # commit everything queued so far
            self._idle.clear()
            self._schedule()
            await self._idle.wait()
        self._jobs.put(None)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        await self._checkpoints.close()
        if self._conn is not None:
            self._conn.close()  # the last connection to close checkpoints the rest and removes the WAL
            self._conn = self._cursor = None

    def _enqueue(self, write: Write, *, first: bool = False) -> None:
        if first:
            self._pending.insert(0, write)
        else:
            self._pending.append(write)
        self._schedule()

    def _schedule(self) -> None:
        # Not at once: the writes submitted in this turn of the loop join the batch.
        if not self._busy and not self._kick_scheduled:
            self._kick_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._kick)

    # -- on the event loop ----------------------------------------------------------

    def _forming(self) -> bool:
        return self._busy

    def _kick(self) -> None:
        """Start the next batch: run its statements here, hand the commit to the thread."""
        if self._held and not self._busy:
            self._take_held()  # before the flag goes down: queueing them schedules no second kick
        self._kick_scheduled = False
        while not self._busy and self._pending:
            size = self.max_batch
            if self._pending[0].first:  # urgent marks commit on their own, not behind a big batch
                size = next(
                    (i for i, w in enumerate(self._pending[:size]) if not w.first), min(size, len(self._pending))
                )
            batch = self._pending[:size]
            del self._pending[:size]
            writes, prunes = self._split(batch)
            groups = [w.steps for w in writes]
            if not any(groups) and not prunes and not self.retention.due():
                # Only flushes: every earlier write is committed, so they are done.
                self._resolve(writes, [WriteResult() for _ in writes], None)
                continue
            self._busy = True
            if prunes or not any(groups) or not self._begin():
                self._jobs.put(_Job(batch))  # the thread runs it whole (waiting for a lock if need be)
                return
            try:
                results = [self._run_steps(steps) for steps in groups]
            except Exception as exc:
                log.error("store: batch of %d writes failed: %s", len(writes), exc)
                with contextlib.suppress(sqlite3.Error):
                    self._require_conn().rollback()
                self._booked(writes, None)
                self._busy = False
                self._resolve(writes, None, exc)
                continue
            self._jobs.put(_Job(writes, results))
        if not self._busy and self._idle is not None:
            self._idle.set()

    def _begin(self) -> bool:
        """``BEGIN IMMEDIATE`` without waiting; False when it did not begin (another connection holds the lock)."""
        conn = self._require_conn()
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        except sqlite3.Error:
            # Locked or busy: the thread runs the batch, waiting up to busy_timeout
            # (any other error it reports to the batch's waiters).
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.rollback()
            return False
        return True

    def _run_steps(self, steps: Sequence[Step]) -> WriteResult:
        """Run one write's steps, stopping at a failed guard (see :class:`~bot.store.sql.ops.Step`)."""
        cursor = self._cursor
        if cursor is None:
            raise StoreError("the store is not open")
        execute = cursor.execute
        result = WriteResult()
        rows = result.rows
        counts = result.counts
        for step in steps:
            sql = step.sql
            if step.many:
                counts.append(cursor.executemany(sql, step.params).rowcount)
                continue
            if not step.returning:
                count = execute(sql, step.params).rowcount
            elif (bare := ROWID_INSERTS.get(sql)) is None:
                found = execute(sql, step.params).fetchall()
                rows.extend(found)
                count = len(found)
            else:
                rows.append((execute(bare, step.params).lastrowid,))
                count = 1
            counts.append(count)
            if not count and step.guard:
                result.ok = False
                result.fenced = step.fence
                break
        return result

    def _after(self, outcomes: list[_Outcome]) -> None:
        """A job of the thread ended: wake its waiters, then start the next batch once they had their turn.

        The next batch starts at the end of this turn of the loop, not at once: what the woken waiters write next
        (a run's answer after its start) joins it instead of waiting a whole commit more: batches grow, the writer
        thread wakes less often a message (each wake-up and each time it waits for the GIL costs the event loop a
        futex wake), and the loop spends less CPU per message (measured: see bench/README.md, "The SQLite
        writer")."""
        self._busy = False
        for writes, results, error in outcomes:
            if writes:
                self._resolve(writes, results, error)
        self._checkpoints.wrote(sum(len(writes) for writes, _results, _error in outcomes), may_start=not self._closed)
        self._schedule()

    def _require_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn

    # -- the committer thread --------------------------------------------------------------

    def _main(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                outcomes = self._run(job)
            except Exception as exc:  # a bug must neither kill the only writer nor strand a waiter
                log.exception("store writer: unexpected error")
                with contextlib.suppress(sqlite3.Error):
                    self._require_conn().rollback()
                outcomes = [(job.writes, None, exc)]
            try:
                self._hand_back(outcomes)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return

    def _run(self, job: _Job) -> list[_Outcome]:
        """Commit the loop's open transaction, or run a whole batch; then a retention pass if due."""
        if job.results is None:
            return self._cycle(job.writes)
        results: list[WriteResult] | None = job.results
        error: BaseException | None = None
        started = time.perf_counter()
        try:
            self._require_conn().execute("COMMIT")
            self.stats.commits += 1
        except Exception as exc:
            with contextlib.suppress(sqlite3.Error):
                self._require_conn().rollback()
            results, error = None, exc
            log.error("store: batch of %d writes failed: %s", len(job.writes), exc)
        self._booked(job.writes, results, started)
        if self.retention.due():
            self._prune([])
        if self._checkpoints.reset_due:
            self._checkpoints.finish(self._require_conn())
        return [(job.writes, results, error)]

    def _cycle(self, batch: list[Write]) -> list[_Outcome]:
        writes, prunes = self._split(batch)
        outcomes: list[_Outcome] = []
        if writes:
            started = time.perf_counter()
            try:
                results: list[WriteResult] | None = self._transaction([w.steps for w in writes])
                error: BaseException | None = None
            except Exception as exc:
                results, error = None, exc
                log.error("store: batch of %d writes failed: %s", len(writes), exc)
            self._booked(writes, results, started)
            outcomes.append((writes, results, error))
        if prunes or self.retention.due():
            outcomes.append(self._prune(prunes))
        return outcomes

    def _prune(self, prunes: list[Write]) -> _Outcome:
        steps, done = self.retention.plan()
        try:
            result: WriteResult | None = self._transaction([steps])[0]
            error: BaseException | None = None
            self.stats.retention_passes += 1
        except Exception as exc:
            result, error = None, exc
            log.warning("store: retention pass failed: %s", exc)
        done(result)
        return prunes, None if result is None else [result] * len(prunes), error

    def _hand_back(self, outcomes: list[_Outcome]) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._after, outcomes)

    def _transaction(self, groups: Sequence[Sequence[Step]]) -> list[WriteResult]:
        if not any(groups):
            return [WriteResult() for _ in groups]
        conn = self._require_conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            results = [self._run_steps(steps) for steps in groups]
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.rollback()
            raise
        self.stats.commits += 1
        return results


@dataclass(slots=True)
class _Job:
    """Work for the committer thread: commit the loop's transaction (``results`` set) or run ``writes`` whole."""

    writes: list[Write]
    results: list[WriteResult] | None = None


_Outcome = tuple[list[Write], list[WriteResult] | None, BaseException | None]
