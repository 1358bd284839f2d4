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
import re
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import asyncpg

from bot.store.base import StoreError
from bot.store.sql.ops import COUNT_EVENTS, Step, Write, WriteResult, numbered
from bot.store.sql.pg_shapes import (
    ShapeFunctions,
    by_columns,
    by_function,
    call_shape,
    linked_tables,
    run_of_one_shape,
    write_steps,
)
from bot.store.sql.retention import Retention
from bot.store.sql.writer import GroupCommit

log = logging.getLogger(__name__)


def dsn_of(url: str) -> str:
    """A URL asyncpg accepts (without SQLAlchemy's ``+driver``)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+')[0]}{sep}{rest}"


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
        self._linked: frozenset[str] = frozenset()
        """Tables whose writes may touch other tables (triggers, rules, foreign keys): never moved past others."""
        self._functions = ShapeFunctions()

    async def open(self) -> None:
        try:
            self._conn = await self._connect()
            self.retention.event_count = await self._conn.fetchval(COUNT_EVENTS)
            self._linked = await linked_tables(self._conn)
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
        self.release_held()
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
            for start, end in await self._parts([w.steps for w in writes]):
                await self._commit(writes[start:end])
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

    async def _commit(self, writes: list[Write]) -> None:
        started = time.perf_counter()
        try:
            results: list[WriteResult] | None = await self._transaction([w.steps for w in writes])
            error: BaseException | None = None
        except Exception as exc:
            results, error = None, exc
            log.error("store: batch of %d writes failed: %s", len(writes), exc)
        self._booked(writes, results, started)
        self._resolve(writes, results, error)

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._connect()  # the server restarted or dropped us
            self._linked = await linked_tables(self._conn)
            self._functions.reset()
        return self._conn

    async def _parts(self, groups: Sequence[Sequence[Step]]) -> list[tuple[int, int]]:
        """How a batch commits: as runs of one pipelined call each (:meth:`_call`), each its own batch, when every
        write is in one; else all of it in one transaction.  A run of calls commits by itself (the protocol's
        implicit transaction, every call or none), so it needs no ``BEGIN`` and ``COMMIT``: two round trips fewer
        each, and the next run need not wait for a batch's last round trip."""
        whole = [(0, len(groups))]
        try:
            await self._functions.make(await self._connection(), groups)
        except Exception:  # the batch's own transaction meets it again and fails its writes
            return whole
        parts, i = [], 0
        while i < len(groups):
            end = self._call(groups, i)[0]
            if end is None:
                return whole
            parts.append((i, end))
            i = end
        return parts

    def _call(self, groups: Sequence[Sequence[Step]], start: int) -> tuple[int | None, str | None]:
        """Where the run of writes from ``start`` that go in one pipelined call, as one statement each, ends (None:
        ``groups[start]`` cannot), and the function they call (None: a plain statement each, no fence checks)."""
        if _single(groups[start], set()) is not None:
            return start + len(_run_of_single_steps(groups, start, set())), None
        shape = call_shape(groups[start])
        name = self._functions.name(shape)
        if name is None:
            return None, None
        end = start + 1
        while end < len(groups) and call_shape(groups[end]) == shape:
            end += 1
        return end, name

    async def _transaction(self, groups: Sequence[Sequence[Step]]) -> list[WriteResult]:
        """The writes of one batch in one transaction, in order, in as few round trips as their meaning allows.

        asyncpg waits for each statement's answer before it sends the next (a round trip of both processes'
        CPU each, and the batch's time is its sum), so: every fence check of the batch is one statement first
        (:data:`FENCES_HELD`), and a run of consecutive writes of one statement each, with the same SQL, goes
        in one pipelined round trip (:func:`_one_each`); their order, and what each sees, stay as one by one.
        """
        if not any(groups):
            return [WriteResult() for _ in groups]
        conn = await self._connection()
        await self._functions.make(conn, groups)
        end, name = self._call(groups, 0)
        if end == len(groups):  # one call: atomic by itself
            try:
                results = await (_one_each(conn, groups) if name is None else by_function(conn, groups, name))
            except BaseException:
                self._functions.reset()
                raise
            self.stats.commits += 1
            return results
        results = []
        try:
            async with conn.transaction():
                held = await _fences_held(conn, groups)
                i = 0
                while i < len(groups):
                    results.extend(await self._next(conn, groups, i, held))
                    i = len(results)
        except BaseException:
            self._functions.reset()  # made again (CREATE OR REPLACE) before they are used next
            raise
        self.stats.commits += 1
        return results

    async def _next(
        self, conn: asyncpg.Connection, groups: Sequence[Sequence[Step]], i: int, held: set[tuple[Any, ...]]
    ) -> list[WriteResult]:
        """The results of ``groups[i]`` and of the writes after it that go in the same round trips."""
        run = _run_of_single_steps(groups, i, held)
        if len(run) > 1:
            return await _one_each(conn, run)
        end, name = self._call(groups, i)
        if end is not None and name is not None:
            return await by_function(conn, groups[i:end], name)
        run, columns, _shape = run_of_one_shape(groups, i, held, self._linked)
        if len(run) > 1 and columns:
            return await by_columns(conn, run, columns, held)
        return [await write_steps(conn, groups[i], held)]


FENCES_HELD = (
    "SELECT f.partition, f.token FROM partition_fences f "
    "JOIN unnest($1::int[], $2::bigint[]) AS u (partition, token) ON f.partition = u.partition AND f.token = u.token "
    "FOR SHARE OF f"
)
"""The check of every fencing token a batch carries (:data:`bot.store.sql.fences.CHECK_FENCE_PG`, one statement for
all): the share locks hold until the commit, so every write of the batch runs under its token, and the next owner's
raise waits for the commit."""


async def _fences_held(conn: asyncpg.Connection, groups: Sequence[Sequence[Step]]) -> set[tuple[Any, ...]]:
    """Which (partition, token) pairs the batch's fence steps carry are current."""
    wanted = {step.params for steps in groups for step in steps if step.fence}
    if not wanted:
        return set()
    pairs = sorted(wanted)
    rows = await conn.fetch(FENCES_HELD, [p for p, _ in pairs], [t for _, t in pairs])
    return {(r[0], r[1]) for r in rows}


def _single(steps: Sequence[Step], held: set[tuple[Any, ...]]) -> Step | None:
    """The one statement of a write that has one besides its fence checks (all passed), if it can be pipelined."""
    body = [s for s in steps if not s.fence]
    if len(body) != 1 or any(s.params not in held for s in steps if s.fence):
        return None
    step = body[0]
    return step if step.sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE") else None


def _run_of_single_steps(
    groups: Sequence[Sequence[Step]], start: int, held: set[tuple[Any, ...]]
) -> Sequence[Sequence[Step]]:
    """``groups[start]`` and the writes right after it that are one statement each with the same SQL."""
    first = _single(groups[start], held)
    if first is None:
        return groups[start : start + 1]
    end = start + 1
    while end < len(groups):
        step = _single(groups[end], held)
        if step is None or step.sql != first.sql or step.returning != first.returning:
            break
        end += 1
    return groups[start:end]


async def _one_each(conn: asyncpg.Connection, run: Sequence[Sequence[Step]]) -> list[WriteResult]:
    """Writes of one statement each (same SQL), pipelined: one Bind/Execute per write and one Sync.

    Each row comes back tagged with its write's index (an extra parameter in ``RETURNING``), so each write gets
    its own rows and count, as if it had run alone.
    """
    steps = [next(s for s in steps if not s.fence) for steps in run]
    sql = numbered(steps[0].sql)
    tag = f"${len(steps[0].params) + 1}::int"
    sql += f", {tag}" if _RETURNING.search(sql) else f" RETURNING {tag}"
    rows = await conn.fetchmany(sql, [(*step.params, i) for i, step in enumerate(steps)])
    results = []
    for steps_of in run:
        result = WriteResult()
        result.counts.extend(1 for s in steps_of if s.fence)
        results.append(result)
    for row in rows:
        result = results[row[-1]]
        if steps[row[-1]].returning:
            result.rows.append(tuple(row)[:-1])
    counts = [0] * len(run)
    for row in rows:
        counts[row[-1]] += 1
    for result, step, count in zip(results, steps, counts, strict=True):
        result.counts.append(count)
        if step.guard and count == 0:
            result.ok = False
    return results


_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


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
