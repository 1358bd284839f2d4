"""The SQL engine: the database behind every SQL repository, SQLite or PostgreSQL, one group-committing writer
(:mod:`bot.store.sql.writer`) and a separate read path, migrations at start, retention passes, fencing and secrets
scrubbed from every write.  The chat tables on it are :class:`~bot.store.sql.store.SqlStore`; each other table has
its repository in :mod:`bot.store.sql.repos`, which writes and reads through :meth:`SqlEngine.write` and
:meth:`SqlEngine.read`."""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from bot import fencing
from bot.clock import SYSTEM_CLOCK, Clock
from bot.fencing import LeaseLost
from bot.store.base import StoreError
from bot.store.sql import fences
from bot.store.sql.lock import ProcessLock
from bot.store.sql.migrate import migrate_url
from bot.store.sql.ops import OnCommit, Step, WriteResult, scrub, utcnow
from bot.store.sql.paths import sqlite_file
from bot.store.sql.retention import Retention, RetentionRule
from bot.store.sql.writer import GroupCommit

__all__ = ["Reader", "SqlEngine"]

log = logging.getLogger("bot.store.sql.store")


class Reader(Protocol):
    """The read path of a backend (its own connections, never the writer's)."""

    reads: int

    async def open(self) -> None: ...

    async def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    async def close(self) -> None: ...


class SqlEngine:
    """The database on SQLite (``sqlite:///path``) or PostgreSQL (``postgresql://``): :meth:`start` /
    :meth:`close`, :meth:`write` (group-committed) and :meth:`write_later`, :meth:`read`, :meth:`flush`,
    :meth:`prune`, :meth:`add_retention`, :meth:`raise_fence` and :meth:`stats`.  What a subclass caches of the
    rows is reset by :meth:`_new_caches` (on start and close)."""

    def __init__(
        self,
        url: str,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 5000,
        history_limit: int = 200,
        processed_ids_limit: int = 100_000,
        cache_chats: int = 1000,
        max_batch: int = 256,
        retention_interval_s: float = 5.0,
        exclusive: bool = False,
        secrets: Iterable[str] = (),
        read_only: bool = False,
        shared: bool = False,
        commit_timer: Callable[[float], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``commit_timer``: told each group commit's duration in seconds (a metric); ``clock``: when retention
        passes are due."""
        self.url = url
        self.clock = clock
        self.commit_timer = commit_timer
        self.shared = shared
        """Other processes write this database too (workers of a scaled-out bot): chat and global settings,
        which any of them may change, are re-read on an announced change and after a TTL
        (:mod:`bot.store.sql.settings`); a chat's history stays cached while this process owns the chat
        (:meth:`forget_chats` when that changes)."""
        self.read_only = read_only
        """Only reads (``bot trace``): nothing is created or migrated; a missing database is an error."""
        self.secrets = tuple(sorted({v for v in secrets if len(v) >= 8}, key=len, reverse=True))
        """Known secret values (tokens, keys): replaced by ``‹redacted: secret›`` in every value written, whatever row
        it is."""
        self.exclusive = exclusive
        """SQLite: hold ``<database>.lock`` while open, so a second process fails at start (the gateway's)."""
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self.history_limit = history_limit
        self.processed_ids_limit = processed_ids_limit
        self.cache_chats = cache_chats
        self.max_batch = max_batch
        self.retention_interval_s = retention_interval_s
        self.dialect = "postgresql" if url.split(":", 1)[0].startswith("postgres") else "sqlite"
        self._rules: list[RetentionRule] = []
        self.before_flush: list[Callable[[], None]] = []
        """Called by :meth:`flush` first: writes kept back for a turn of the loop are queued now (the sent marks,
        :class:`~bot.store.sql.sent_journal.SentMarks`)."""
        self._writer: GroupCommit | None = None
        self._reader: Reader | None = None
        self._tempdir: str | None = None
        self._lock: ProcessLock | None = None
        self._idle_retention: asyncio.Task[None] | None = None
        self._new_caches()

    def _new_caches(self) -> None:
        """Reset what is cached of the rows (a subclass's caches): on start and close."""

    # -- life cycle ---------------------------------------------------------------

    async def start(self) -> None:
        if self._reader is not None:
            return
        retention = Retention(
            history_limit=self.history_limit,
            processed_ids_limit=self.processed_ids_limit,
            interval_s=self.retention_interval_s,
            clock=self.clock.monotonic,
        )
        retention.rules = self._rules  # shared, so rules added later count too
        writer: GroupCommit | None
        reader: Reader
        if self.dialect == "postgresql":
            try:
                from bot.store.sql.postgres import PgReader, PgWriter, dsn_of
            except ImportError as exc:
                raise StoreError(
                    f"PostgreSQL needs the postgres extra ({exc}): pip install -e '.[postgres]' in the bot's clone"
                ) from None
            url = self.url
            writer = PgWriter(
                dsn_of(url), busy_timeout_ms=self.busy_timeout_ms, retention=retention, max_batch=self.max_batch
            )
            reader = PgReader(dsn_of(url))
        else:
            from bot.store.sql.sqlite_reader import SqliteReader
            from bot.store.sql.sqlite_writer import SqliteWriter

            path = self._sqlite_path()
            url = f"sqlite:///{path}"
            if self.exclusive and not self.read_only:
                self._lock = ProcessLock(Path(path + ".lock"))
                self._lock.acquire(path)
            writer = SqliteWriter(
                path,
                synchronous=self.synchronous,
                busy_timeout_ms=self.busy_timeout_ms,
                retention=retention,
                max_batch=self.max_batch,
            )
            reader = SqliteReader(path, busy_timeout_ms=self.busy_timeout_ms)
        writer.timer = self.commit_timer
        if self.read_only:
            writer = None  # a tool that only reads: no migration, no writer, nothing created
        try:
            if writer is not None:
                try:
                    await migrate_url(url)
                except Exception as exc:  # SQLAlchemy's errors, OSError: whatever stops the migration
                    raise StoreError(f"cannot open the database: {exc}") from exc
                await writer.open()
            try:
                await reader.open()
            except BaseException:
                if writer is not None:
                    await writer.close()
                raise
        except BaseException:
            self._unlock()
            raise
        self._writer, self._reader = writer, reader
        self._new_caches()
        if writer is not None:
            # Passes also run when nothing is written (the writer runs them between batches otherwise),
            # so a chat's history is cut to its limit soon after its last message, not at the next one.
            self._idle_retention = asyncio.create_task(self._retain_when_idle(retention), name="store-retention")
        log.info("store: %s (synchronous=%s)", self.dialect, self.synchronous if self.dialect == "sqlite" else "-")

    def _sqlite_path(self) -> str:
        path = self.url.split(":///", 1)[1] if ":///" in self.url else ""
        if path in ("", ":memory:"):
            # Two connections cannot share a private in-memory database: use a
            # throw-away file instead (same semantics for the process's lifetime).
            self._tempdir = tempfile.mkdtemp(prefix="bot-store-")
            return str(Path(self._tempdir) / "bot.db")
        return sqlite_file(path, read_only=self.read_only)

    async def _retain_when_idle(self, retention: Retention) -> None:
        while True:
            await self.clock.sleep(retention.interval_s)
            if retention.grew() and retention.due():
                try:
                    await self.prune()
                except StoreError as exc:
                    log.warning("store: retention pass failed (tried again later): %s", exc)

    async def close(self) -> None:
        task, self._idle_retention = self._idle_retention, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        writer, reader = self._writer, self._reader
        self._writer = self._reader = None
        if writer is not None:
            await writer.close()
        if reader is not None:
            await reader.close()
        self._new_caches()
        self._unlock()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def _unlock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    # -- generic access, for the tables of later steps ------------------------------

    async def write(
        self,
        steps: Sequence[Step],
        *,
        on_commit: OnCommit | None = None,
        grows: str | None = None,
        events: int = 0,
        first: bool = False,
        received: str | None = None,
    ) -> WriteResult:
        """Run ``steps`` in the next group commit; returns after the commit.

        ``first``: ahead of the writes already queued, in a small commit of its own (as for
        :meth:`write_later`; only for steps on rows that are committed already).
        ``received``: the inbound event this write marks handled; when its insert is still held
        (:meth:`receive_held`), the write carries it, and raises :class:`EventNotStored` if it fails.

        Inside a partition's work (:func:`bot.fencing.fenced`) the write first checks the partition's fencing
        token in the same transaction; :class:`~bot.fencing.LeaseLost` when it is no longer current (nothing
        was written).
        """
        if self._writer is None:
            raise StoreError("the store is not started")
        steps = self._fenced(self._scrub(steps), "the write")
        if received is None:
            result = await self._writer.submit(steps, on_commit=on_commit, grows=grows, events=events, first=first)
        else:
            result = await self._writer.submit_handling(
                received, steps, on_commit=on_commit, grows=grows, events=events
            )
        if result.fenced:
            raise LeaseLost("the partition has another owner: the write was refused")
        return result

    def write_later(self, steps: Sequence[Step], *, what: str = "write", first: bool = False) -> None:
        """Queue ``steps`` for the next group commit without waiting for it.

        For bookkeeping nobody waits on (a run's start row, an outbox entry marked
        sent): later writes are committed after it, in order, and a failure is logged.
        ``first``: ahead of the writes already queued, for a mark whose delay has a cost
        (a reply sent and not yet marked is sent again after a crash); only for steps on
        rows that are committed already.
        """
        if self._writer is None:
            raise StoreError("the store is not started")
        self._writer.submit_unwaited(self._fenced(self._scrub(steps), what), what, first=first)

    def _fenced(self, steps: Sequence[Step], what: str) -> Sequence[Step]:
        """``steps`` behind the current partition's fencing token, if the work running now has one."""
        return fences.behind(fencing.check(what), steps, self.dialect)

    async def raise_fence(self, partition: int, owner: str) -> int:
        """A new fencing token for ``partition``, from now on the only one its writes may carry.

        In a transaction of its own (on the read path's connections, not in a group commit): it waits for the
        batches that hold the old token to commit, and every write that checks the old token afterwards is
        refused.
        """
        if self._reader is None:
            raise StoreError("the store is not started")
        params = (partition, owner, utcnow())
        if self.dialect == "sqlite":  # one writer: its queue is the order
            return int((await self.write([Step(fences.RAISE_FENCE, params, returning=True)])).rows[0][0])
        return int((await self._reader.fetch(fences.RAISE_FENCE, params))[0][0])

    def _scrub(self, steps: Sequence[Step]) -> Sequence[Step]:
        """``steps`` with known secret values replaced in their text parameters (a model's answer or a
        tool's output may repeat a token; no stored row ever holds one)."""
        return scrub(steps, self.secrets) if self.secrets else steps

    @property
    def many_rows(self) -> bool:
        """Whether writes may hold :attr:`Step.many <bot.store.sql.ops.Step.many>` steps (SQLite's writer runs them
        with ``executemany``; PostgreSQL's takes multi-row statements instead)."""
        return self.dialect == "sqlite"

    async def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query on the read path (not for the per-message path: use the caches)."""
        if self._reader is None:
            raise StoreError("the store is not started")
        return await self._reader.fetch(sql, params)

    async def flush(self) -> None:
        """Wait until every write submitted before this call is committed (held inserts too, and what
        :attr:`before_flush` queues)."""
        for queue in self.before_flush:
            queue()
        if self._writer is not None:
            self._writer.release_held()
        await self.write(())

    async def prune(self) -> None:
        """Run a retention pass now (normally the writer runs one every interval)."""
        if self._writer is None:
            raise StoreError("the store is not started")
        await self._writer.submit((), prune=True)

    def add_retention(self, rule: RetentionRule) -> None:
        """Add statements to every retention pass (e.g. drop old trace events)."""
        self._rules.append(rule)

    def stats(self) -> dict[str, int]:
        out = self._writer.stats.as_dict() if self._writer is not None else {}
        out["reads"] = self._reader.reads if self._reader is not None else 0
        return out
