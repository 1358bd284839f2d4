"""SQLite behind the store: raw ``sqlite3``, one writer thread, one reader thread.

Measured on a 2-core machine (WAL, ``synchronous=FULL``): a commit costs about
200 µs (the fsync), a hop to a worker thread about 150 µs, and the async
drivers add far more per statement than either.  So the writer is a dedicated
thread with its own connection: it drains the queue, runs the batch inside
``BEGIN IMMEDIATE`` ... ``COMMIT`` and hands all results back with ONE
``call_soon_threadsafe`` per batch.  The event loop never waits for the fsync
(``sqlite3`` releases the GIL while SQLite works), and writes queued meanwhile
form the next batch.

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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from bot.store.base import StoreError
from bot.store.ops import COUNT_EVENTS, Step, Write, WriteResult, run_guarded
from bot.store.retention import Retention
from bot.store.writer import GroupCommit

log = logging.getLogger(__name__)

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def _value(value: Any) -> Any:
    # The text form SQLAlchemy uses for DateTime on SQLite, so both read the same rows
    # and text order is time order.
    return value.strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(value, datetime) else value


def _params(params: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_value(p) for p in params)


def connect(path: str, *, synchronous: str, busy_timeout_ms: int, wal: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (we issue BEGIN/COMMIT) with our pragmas."""
    if synchronous.upper() not in SYNCHRONOUS:
        raise StoreError(f"store.synchronous must be one of {', '.join(SYNCHRONOUS)}")
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=max(busy_timeout_ms, 0) / 1000)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    return conn


class SqliteWriter(GroupCommit):
    """The single SQLite writer: a thread, a connection, a queue."""

    def __init__(
        self, path: str, *, synchronous: str, busy_timeout_ms: int, retention: Retention, max_batch: int = 256
    ) -> None:
        super().__init__(retention, max_batch)
        self.path = path
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._queue: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None

    async def open(self) -> None:
        try:
            conn = connect(self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms, wal=True)
            self.retention.event_count = conn.execute(COUNT_EVENTS).fetchone()[0]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._main, name="store-writer", daemon=True)
        self._thread.start()
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            # The thread's last resolutions were queued on the loop before it ended,
            # so they have run by the time this await returns.
            await asyncio.to_thread(self._thread.join)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _enqueue(self, write: Write) -> None:
        self._queue.put(write)

    # -- the writer thread --------------------------------------------------------

    def _main(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                self._cycle(batch)
            except Exception as exc:  # a bug must neither kill the only writer nor strand a waiter
                log.exception("store writer: unexpected error")
                try:
                    self._hand_back(batch, None, exc)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    return

    def _cycle(self, batch: list[Write]) -> None:
        writes, prunes = self._split(batch)
        if writes:
            try:
                results: list[WriteResult] | None = self._transaction([w.steps for w in writes])
                error: BaseException | None = None
            except Exception as exc:
                results, error = None, exc
                log.error("store: batch of %d writes failed: %s", len(writes), exc)
            self._booked(writes, results)
            self._hand_back(writes, results, error)
        if prunes or self.retention.due():
            self._prune(prunes)

    def _prune(self, prunes: list[Write]) -> None:
        steps, done = self.retention.plan()
        try:
            result: WriteResult | None = self._transaction([steps])[0]
            error: BaseException | None = None
            self.stats.retention_passes += 1
        except Exception as exc:
            result, error = None, exc
            log.warning("store: retention pass failed: %s", exc)
        done(result)
        if prunes:
            self._hand_back(prunes, None if result is None else [result] * len(prunes), error)

    def _hand_back(self, writes: list[Write], results: list[WriteResult] | None, error: BaseException | None) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._resolve, writes, results, error)

    def _transaction(self, groups: Sequence[Sequence[Step]]) -> list[WriteResult]:
        if not any(groups):
            return [WriteResult() for _ in groups]
        conn = self._conn
        assert conn is not None
        cur = conn.cursor()

        def execute(step: Step) -> tuple[int, list[tuple[Any, ...]]]:
            cur.execute(step.sql, _params(step.params))
            if step.returning:
                rows = cur.fetchall()
                return len(rows), rows
            return cur.rowcount, []

        cur.execute("BEGIN IMMEDIATE")
        try:
            results = [run_guarded(steps, execute) for steps in groups]
            cur.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.rollback()
            raise
        finally:
            cur.close()
        self.stats.commits += 1
        return results


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
        return self._conn.execute(sql, _params(params)).fetchall()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)
