"""The WAL kept short beside the SQLite writer: checkpoints on a connection of their own, and the writer finishing
one now and then so the WAL starts over.

SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL pages and takes many commits' time:
every message waiting on that batch waited as long (measured: see bench/README.md, "The SQLite writer").  So the
writer's connection has none (:func:`~bot.store.sql.sqlite.writer_connection`), and every :data:`CHECKPOINT_EVERY`
writes a PASSIVE checkpoint runs on another connection, which never blocks the writer (WAL lets them run together).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor

from bot.store.sql.sqlite import connect
from bot.store.sql.writer import WriterStats

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 1000
"""Writes between WAL checkpoints: about 4 MB of WAL (SQLite's own default is every 1,000 pages)."""
RESET_EVERY = 1
"""Checkpoints beside the writer per one the writer finishes (the WAL then starts over): about 16 MB of WAL
between resets; finishing costs the writer a sync of the database file, so not after every one (measured: see
bench/README.md, "The SQLite writer")."""


class WalCheckpoints:
    """The checkpoints of one :class:`~bot.store.sql.sqlite_writer.SqliteWriter`: counted on the event loop
    (:meth:`wrote`), run on a thread of their own, finished by the writer's committer thread (:meth:`finish`)."""

    def __init__(self, path: str, *, synchronous: str, busy_timeout_ms: int, stats: WriterStats) -> None:
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.stats = stats
        self._executor: ThreadPoolExecutor | None = None
        self._running: asyncio.Future[None] | None = None
        self._conn: sqlite3.Connection | None = None
        self._unchecked = 0
        self.reset_due = False
        """A checkpoint beside the writer finished: the writer finishes it so the WAL can start over."""

    def wrote(self, count: int, *, may_start: bool) -> None:
        """On the event loop, after a job of the committer thread: ``count`` writes more; a checkpoint starts
        once :data:`CHECKPOINT_EVERY` of them were written since the last (when ``may_start``: not closing)."""
        self._unchecked += count
        if self._unchecked >= CHECKPOINT_EVERY and self._running is None and may_start:
            self._start()

    def _start(self) -> None:
        """Copy the WAL into the database on a connection of its own, beside the writer."""
        self._unchecked = 0
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-checkpoint")
        future = asyncio.get_running_loop().run_in_executor(self._executor, self._checkpoint)
        self._running = future
        future.add_done_callback(self._checkpointed)

    def _checkpoint(self) -> None:
        conn = self._conn
        if conn is None:
            conn = self._conn = connect(self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms)
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _checkpointed(self, future: asyncio.Future[None]) -> None:
        self._running = None
        if future.cancelled():
            return
        if future.exception() is not None:
            log.warning("store: WAL checkpoint failed (retried later): %s", future.exception())
        else:
            self.stats.checkpoints += 1
            self.reset_due = self.stats.checkpoints % RESET_EVERY == 0

    def finish(self, conn: sqlite3.Connection) -> None:
        """On the committer thread, between batches: copy the few frames written since the checkpoint beside it.

        A checkpoint beside a busy writer never catches up with it (frames keep coming while
        it copies), and a WAL that is never wholly copied never starts over: it grew by about
        14 KB per message, 420 MB at 20,000.  The writer itself, between two batches, has only
        what came in meanwhile to copy (milliseconds); once all of it is in the database, the
        next transaction writes the WAL from its start (and ``journal_size_limit`` trims the file).
        """
        self.reset_due = False
        try:
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("store: finishing a WAL checkpoint failed (tried again later): %s", exc)
            return
        if not busy and frames == copied:
            self.stats.wal_resets += 1

    async def close(self) -> None:
        """Wait for a checkpoint under way, then close the checkpoints' connection and thread."""
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        if self._executor is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_conn)
            self._executor.shutdown(wait=False)
            self._executor = None

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
