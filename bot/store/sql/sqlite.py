"""SQLite connections behind the store: every pragma we set, in one place, and the WAL truncation after a forget.

The store's SQLite side is three parts, each on its own connection: the single writer
(:mod:`bot.store.sql.sqlite_writer`, statements on the event loop, the fsync on a thread), the WAL checkpoints beside
it (:mod:`bot.store.sql.sqlite_checkpoints`) and the reader (:mod:`bot.store.sql.sqlite_reader`, cache misses on a
thread of its own).  This module opens them: autocommit (we issue ``BEGIN``/``COMMIT``), WAL, ``secure_delete``,
and what each part adds (the writer's page cache and WAL limits, the reader's ``query_only``).
"""

from __future__ import annotations

import logging
import sqlite3

from bot.store.base import StoreError
from bot.store.sql.sqlite_params import register_adapters

log = logging.getLogger(__name__)

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
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


def writer_connection(path: str, *, synchronous: str, busy_timeout_ms: int) -> sqlite3.Connection:
    """The single writer's connection: WAL, no automatic checkpoint (they run beside the writer, see
    :mod:`bot.store.sql.sqlite_checkpoints`, not inside a COMMIT), a trimmed WAL and a large page cache."""
    conn = connect(path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, wal=True)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KB}")
    return conn


def reader_connection(path: str, *, busy_timeout_ms: int) -> sqlite3.Connection:
    """The reader's connection: it only reads (``query_only``), so it never takes the write lock."""
    conn = connect(path, synchronous="FULL", busy_timeout_ms=busy_timeout_ms)
    conn.execute("PRAGMA query_only = ON")
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
