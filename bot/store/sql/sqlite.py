"""SQLite behind the store: raw ``sqlite3``, one writer connection, one reader thread.

A commit is mostly the fsync and a statement a little C, but every hop between the event loop and a worker thread
costs more than either, and a worker thread that runs Python waits for the GIL behind the busy loop (measured: see
bench/README.md, "The SQLite writer").  So a batch's statements run on the event loop, inside ``BEGIN IMMEDIATE``,
and only the ``COMMIT`` goes to the committer thread (``sqlite3`` releases the GIL for it), which hands the results
back with ONE ``call_soon_threadsafe`` per batch.  The event loop never waits for the fsync, and writes queued
meanwhile form the next batch.  A lock held by another connection never blocks the loop: that batch runs whole on
the thread, which waits up to ``busy_timeout``.

Reads (cache misses only) run on a second thread with a second connection, so
they neither block the loop nor queue behind the writer; WAL lets them read
while the writer commits.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bot.store.base import StoreError
from bot.store.sql.ops import COUNT_EVENTS, ROWID_INSERTS, Step, Write, WriteResult
from bot.store.sql.retention import Retention
from bot.store.sql.sqlite_params import register_adapters
from bot.store.sql.sqlite_params import sqlite_datetime as _sqlite_datetime  # noqa: F401  (its old home, tests import it)
from bot.store.sql.writer import GroupCommit

log = logging.getLogger(__name__)

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
CHECKPOINT_EVERY = 1000
"""Writes between WAL checkpoints: about 4 MB of WAL (SQLite's own default is every 1,000 pages)."""
RESET_EVERY = 1
"""Checkpoints beside the writer per one the writer finishes (the WAL then starts over): about 16 MB of WAL
between resets; finishing costs the writer a sync of the database file, so not after every one (measured: see
bench/README.md, "The SQLite writer")."""
WRITER_CACHE_KB = 64 * 1024
"""The writer's page cache (SQLite's default is 2 MB): the index pages its inserts touch stay in memory.  The
statements of a message take less of the event loop's time with it, more so as the database grows (measured: see
bench/README.md, "The SQLite writer"); memory: what the writer has touched, up to this much."""
WAL_SIZE_LIMIT = 16 * 1024 * 1024
"""``journal_size_limit``: a WAL that grew past this is truncated to it when it starts over."""


# sqlite3 has adapters only per process: registered once, by the module that opens our connections.
register_adapters()


def connect(path: str, *, synchronous: str, busy_timeout_ms: int, wal: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (we issue BEGIN/COMMIT) with our pragmas."""
    if synchronous.upper() not in SYNCHRONOUS:
        raise StoreError(f"store.synchronous must be one of {', '.join(SYNCHRONOUS)}")
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=max(busy_timeout_ms, 0) / 1000)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    # What a delete or an update frees is overwritten with zeros, so a forgotten memory cannot be read back from
    # free pages (some builds have it on by default, ours had not).  Cost: docs/operations/storage.md.
    conn.execute("PRAGMA secure_delete = ON")
    return conn


def truncate_wal(path: str, busy_timeout_ms: int) -> bool:
    """Copy the whole WAL into the database file and empty it (after a forget: the old page images in the WAL
    still hold what was deleted).  False when readers or the writer kept it from finishing (it is done later by
    the writer's own checkpoints)."""
    conn = connect(path, synchronous="FULL", busy_timeout_ms=busy_timeout_ms)
    try:
        busy, _frames, _copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        log.warning("store: could not checkpoint the WAL after a forget (done later): %s", exc)
        return False
    finally:
        conn.close()
    return not busy


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
        self._checkpointer: ThreadPoolExecutor | None = None
        self._checkpointing: asyncio.Future[None] | None = None
        self._writes_unchecked = 0
        self._ckpt_conn: sqlite3.Connection | None = None
        self._reset_due = False
        """A checkpoint beside the writer finished: the writer finishes it so the WAL can start over."""

    async def open(self) -> None:
        try:
            conn = connect(self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms, wal=True)
            # Checkpoints run beside the writer (see _checkpoint), not inside a COMMIT.
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KB}")
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
        if self._checkpointing is not None:
            await asyncio.gather(self._checkpointing, return_exceptions=True)
        if self._checkpointer is not None:
            await asyncio.get_running_loop().run_in_executor(self._checkpointer, self._close_checkpointer)
            self._checkpointer.shutdown(wait=False)
            self._checkpointer = None
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
        self._writes_unchecked += sum(len(writes) for writes, _results, _error in outcomes)
        if self._writes_unchecked >= CHECKPOINT_EVERY and self._checkpointing is None and not self._closed:
            self._start_checkpoint()
        self._schedule()

    # -- checkpoints ----------------------------------------------------------------------

    def _start_checkpoint(self) -> None:
        """Copy the WAL into the database on a connection of its own, beside the writer.

        SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL
        pages and takes many commits' time: every message waiting on that batch
        waited as long (measured: see bench/README.md, "The SQLite writer").  A
        PASSIVE checkpoint on another connection never blocks the writer (WAL lets
        them run together), so commits stay short.
        """
        self._writes_unchecked = 0
        if self._checkpointer is None:
            self._checkpointer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-checkpoint")
        assert self._loop is not None
        future = self._loop.run_in_executor(self._checkpointer, self._checkpoint)
        self._checkpointing = future
        future.add_done_callback(self._checkpointed)

    def _checkpoint(self) -> None:
        conn = self._ckpt_conn
        if conn is None:
            conn = self._ckpt_conn = connect(
                self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms
            )
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _checkpointed(self, future: asyncio.Future[None]) -> None:
        self._checkpointing = None
        if future.cancelled():
            return
        if future.exception() is not None:
            log.warning("store: WAL checkpoint failed (retried later): %s", future.exception())
        else:
            self.stats.checkpoints += 1
            self._reset_due = self.stats.checkpoints % RESET_EVERY == 0

    def _close_checkpointer(self) -> None:
        conn, self._ckpt_conn = self._ckpt_conn, None
        if conn is not None:
            conn.close()

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
        if self._reset_due:
            self._finish_checkpoint()
        return [(job.writes, results, error)]

    def _finish_checkpoint(self) -> None:
        """On the committer thread, between batches: copy the few frames written since the checkpoint beside it.

        A checkpoint beside a busy writer never catches up with it (frames keep coming while
        it copies), and a WAL that is never wholly copied never starts over: it grew by about
        14 KB per message, 420 MB at 20,000.  The writer itself, between two batches, has only
        what came in meanwhile to copy (milliseconds); once all of it is in the database, the
        next transaction writes the WAL from its start (and ``journal_size_limit`` trims the file).
        """
        self._reset_due = False
        try:
            busy, frames, copied = self._require_conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("store: finishing a WAL checkpoint failed (tried again later): %s", exc)
            return
        if not busy and frames == copied:
            self.stats.wal_resets += 1

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


class SqliteReader:
    """The read path: its own connection on its own thread."""

    def __init__(self, path: str, *, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-read")
        self._conn: sqlite3.Connection | None = None
        self.reads = 0

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._conn = await loop.run_in_executor(self._executor, self._connect)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        conn = connect(self.path, synchronous="FULL", busy_timeout_ms=self.busy_timeout_ms)
        conn.execute("PRAGMA query_only = ON")
        return conn

    async def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.reads += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._fetch, sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"could not read from the database: {exc}") from exc

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn.execute(sql, params).fetchall()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)
