"""PostgreSQL behind the store: asyncpg, one writer connection, a small read pool.

The same group commit as SQLite, on an asyncio task instead of a thread
(asyncpg is asynchronous already).  ``busy_timeout_ms`` becomes the writer's
``lock_timeout``, so a table locked by someone else fails the batch instead of
stalling every chat.  For more than one gateway process, each has its own
writer; PostgreSQL serialises them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import asyncpg

from bot.store.base import StoreError
from bot.store.ops import COUNT_EVENTS, Step, Write, WriteResult, numbered
from bot.store.retention import Retention
from bot.store.writer import GroupCommit

log = logging.getLogger(__name__)


def dsn_of(url: str) -> str:
    """A URL asyncpg accepts (without SQLAlchemy's ``+driver``)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+')[0]}{sep}{rest}"


def _count(status: str) -> int:
    # asyncpg returns the command tag: "INSERT 0 1", "UPDATE 3", "DELETE 0".
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class PgWriter(GroupCommit):
    """The PostgreSQL writer: one connection, batches on an asyncio task."""

    def __init__(self, dsn: str, *, busy_timeout_ms: int, retention: Retention, max_batch: int = 256) -> None:
        super().__init__(retention, max_batch)
        self.dsn = dsn
        self.busy_timeout_ms = busy_timeout_ms
        self._pending: deque[Write | None] = deque()
        self._wake = asyncio.Event()
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        try:
            self._conn = await self._connect()
            self.retention.event_count = await self._conn.fetchval(COUNT_EVENTS)
        except (OSError, asyncpg.PostgresError) as exc:
            raise StoreError(f"cannot open the database: {exc}") from exc
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._main(), name="store-writer")
        self._closed = False

    async def _connect(self) -> asyncpg.Connection:
        conn = await asyncpg.connect(self.dsn)
        if self.busy_timeout_ms > 0:
            await conn.execute(f"SET lock_timeout = {int(self.busy_timeout_ms)}")
        return conn

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pending.append(None)
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _enqueue(self, write: Write, *, first: bool = False) -> None:
        if first:
            self._pending.appendleft(write)
        else:
            self._pending.append(write)
        self._wake.set()

    async def _main(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch: list[Write] = []
                while self._pending and len(batch) < self.max_batch:
                    item = self._pending.popleft()
                    if item is None:
                        if batch:
                            await self._guarded_cycle(batch)
                        return
                    batch.append(item)
                await self._guarded_cycle(batch)

    async def _guarded_cycle(self, batch: list[Write]) -> None:
        try:
            await self._cycle(batch)
        except Exception as exc:  # a bug must neither kill the only writer nor strand a waiter
            log.exception("store writer: unexpected error")
            self._resolve(batch, None, exc)

    async def _cycle(self, batch: list[Write]) -> None:
        writes, prunes = self._split(batch)
        if writes:
            started = time.perf_counter()
            try:
                results: list[WriteResult] | None = await self._transaction([w.steps for w in writes])
                error: BaseException | None = None
            except Exception as exc:
                results, error = None, exc
                log.error("store: batch of %d writes failed: %s", len(writes), exc)
            self._booked(writes, results, started)
            self._resolve(writes, results, error)
        if prunes or self.retention.due():
            steps, done = self.retention.plan()
            try:
                result: WriteResult | None = (await self._transaction([steps]))[0]
                error = None
                self.stats.retention_passes += 1
            except Exception as exc:
                result, error = None, exc
                log.warning("store: retention pass failed: %s", exc)
            done(result)
            if prunes:
                self._resolve(prunes, None if result is None else [result] * len(prunes), error)

    async def _transaction(self, groups: Sequence[Sequence[Step]]) -> list[WriteResult]:
        if not any(groups):
            return [WriteResult() for _ in groups]
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._connect()  # the server restarted or dropped us
        conn = self._conn
        results = []
        fences: set[tuple[Any, ...]] = set()
        """Tokens this transaction checked already: the first check holds a share lock on the fence row until the
        commit, so it holds for every later write of the batch (one round trip per partition, not per write)."""
        async with conn.transaction():
            for steps in groups:
                result = WriteResult()
                for step in steps:
                    if step.fence and step.params in fences:
                        result.counts.append(1)
                        continue
                    if step.returning:
                        rows = [tuple(r) for r in await conn.fetch(numbered(step.sql), *step.params)]
                        count = len(rows)
                        result.rows.extend(rows)
                    else:
                        count = _count(await conn.execute(numbered(step.sql), *step.params))
                    result.counts.append(count)
                    if step.guard and count == 0:
                        result.ok = False
                        result.fenced = step.fence
                        break
                    if step.fence:
                        fences.add(step.params)
                results.append(result)
        self.stats.commits += 1
        return results


async def _keep_session(_connection: asyncpg.Connection) -> None:
    return None


class PgReader:
    """The read path: a small pool of its own connections."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._pool: asyncpg.Pool | None = None
        self.reads = 0

    async def open(self) -> None:
        try:
            # No reset on release: the read path changes no session state (no SET, LISTEN, advisory lock or open
            # cursor), and asyncpg's default reset is one more round trip after every read.
            self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=4, reset=_keep_session)
        except (OSError, asyncpg.PostgresError) as exc:
            raise StoreError(f"cannot open the database: {exc}") from exc

    async def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._pool is None:
            raise StoreError("the store is not open")
        self.reads += 1
        try:
            return [tuple(r) for r in await self._pool.fetch(numbered(sql), *params)]
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"could not read from the database: {exc}") from exc

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
