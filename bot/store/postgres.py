"""PostgreSQL behind the store: asyncpg, one writer connection, a small read pool.

The same group commit as SQLite, on an asyncio task instead of a thread
(asyncpg is asynchronous already).  ``busy_timeout_ms`` becomes the writer's
``lock_timeout``, so a table locked by someone else fails the batch instead of
stalling every chat.  For more than one gateway process, each has its own
writer; PostgreSQL serialises them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
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
        self._linked: frozenset[str] = frozenset()
        """Tables whose writes may touch other tables (triggers, rules, foreign keys): never moved past others."""

    async def open(self) -> None:
        try:
            self._conn = await self._connect()
            self.retention.event_count = await self._conn.fetchval(COUNT_EVENTS)
            self._linked = await _linked_tables(self._conn)
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
        """The writes of one batch in one transaction, in order, in as few round trips as their meaning allows.

        asyncpg waits for each statement's answer before it sends the next (a round trip of both processes'
        CPU each, and the batch's time is its sum), so: every fence check of the batch is one statement first
        (:data:`FENCES_HELD`), and a run of consecutive writes of one statement each, with the same SQL, goes
        in one pipelined round trip (:func:`_one_each`); their order, and what each sees, stay as one by one.
        """
        if not any(groups):
            return [WriteResult() for _ in groups]
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._connect()  # the server restarted or dropped us
            self._linked = await _linked_tables(self._conn)
        conn = self._conn
        results: list[WriteResult] = []
        async with conn.transaction():
            held = await _fences_held(conn, groups)
            i = 0
            while i < len(groups):
                run = _run_of_single_steps(groups, i, held)
                if len(run) > 1:
                    results.extend(await _one_each(conn, run))
                    i += len(run)
                    continue
                run, columns = _run_of_one_shape(groups, i, held, self._linked)
                if len(run) > 1:
                    results.extend(await _by_columns(conn, run, columns, held))
                    i += len(run)
                    continue
                results.append(await _write(conn, groups[i], held))
                i += 1
        self.stats.commits += 1
        return results


FENCES_HELD = (
    "SELECT f.partition, f.token FROM partition_fences f "
    "JOIN unnest($1::int[], $2::bigint[]) AS u (partition, token) ON f.partition = u.partition AND f.token = u.token "
    "FOR SHARE OF f"
)
"""The check of every fencing token a batch carries (:data:`bot.store.fences.CHECK_FENCE_PG`, one statement for
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


async def _write(
    conn: asyncpg.Connection, steps: Sequence[Step], held: set[tuple[Any, ...]], result: WriteResult | None = None
) -> WriteResult:
    """One write's steps, one statement at a time (a guard that changes no row stops the write); ``result``: what
    its earlier steps gave, to go on from."""
    result = WriteResult() if result is None else result
    for step in steps:
        if step.fence:
            count = 1 if step.params in held else 0
        elif step.returning:
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
    return result


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


LINKED_TABLES = (
    "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal "
    "UNION SELECT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid) "
    "WHERE k.contype = 'f' "
    "UNION SELECT tablename::text FROM pg_rules"
)


async def _linked_tables(conn: asyncpg.Connection) -> frozenset[str]:
    return frozenset(str(r[0]).lower() for r in await conn.fetch(LINKED_TABLES))


_TARGET = re.compile(r"\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([A-Za-z_][A-Za-z0-9_]*)\s", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=256)
def _table_and_words(sql: str) -> tuple[str, frozenset[str]] | None:
    """The table a statement inserts into, updates or deletes from, and every word of it (any may name a table it
    reads); None for any other statement."""
    target = _TARGET.match(sql)
    if target is None:
        return None
    return target.group(1).lower(), frozenset(w.lower() for w in _WORD.findall(sql))


@functools.lru_cache(maxsize=256)
def _columns_of(sqls: tuple[str, ...], linked: frozenset[str]) -> int:
    """How many leading statements of writes made of ``sqls`` may run column by column (each statement for every
    write of a run, then the next): the longest prefix whose every statement, moved before a later statement of an
    earlier write, commutes with it.  Two statements are taken to commute only when they write different tables,
    neither names the other's table anywhere (a read, a subquery: or just a word that happens to be one), and
    neither table has triggers, rules or foreign keys."""
    shapes = [_table_and_words(sql) for sql in sqls]
    if any(shape is None for shape in shapes):
        return 0

    def commute(a: int, b: int) -> bool:
        (ta, words_a), (tb, words_b) = shapes[a], shapes[b]  # type: ignore[misc]
        return ta != tb and ta not in words_b and tb not in words_a and not {ta, tb} & linked

    columns = 0
    while columns < len(sqls) and all(commute(a, columns) for a in range(columns + 1, len(sqls))):
        columns += 1
    return columns


def _shape(steps: Sequence[Step], held: set[tuple[Any, ...]]) -> tuple[tuple[str, bool, bool], ...] | None:
    """A write of several statements whose fence checks all come first and passed: its statements (SQL, guard,
    returning); None for any other write."""
    body = [s for s in steps if not s.fence]
    fences = len(steps) - len(body)
    if len(body) < 2 or any(s.fence for s in steps[fences:]) or any(s.params not in held for s in steps[:fences]):
        return None
    if any(s.many for s in body):
        return None
    return tuple((s.sql, s.guard, s.returning) for s in body)


def _run_of_one_shape(
    groups: Sequence[Sequence[Step]], start: int, held: set[tuple[Any, ...]], linked: frozenset[str]
) -> tuple[Sequence[Sequence[Step]], int]:
    """``groups[start]`` and the writes right after it made of the same statements, with how many leading statements
    of theirs go column by column (:func:`_columns_of`); a run of one when none may."""
    shape = _shape(groups[start], held)
    if shape is None:
        return groups[start : start + 1], 0
    columns = _columns_of(tuple(sql for sql, _, _ in shape), linked)
    end = start + 1
    while columns and end < len(groups) and _shape(groups[end], held) == shape:
        end += 1
    return groups[start:end], columns


async def _by_columns(
    conn: asyncpg.Connection, run: Sequence[Sequence[Step]], columns: int, held: set[tuple[Any, ...]]
) -> list[WriteResult]:
    """Writes of the same statements: each of the first ``columns`` statements for every write still going, pipelined
    (one round trip each, as :func:`_one_each`), then the rest of each write one statement at a time.  The statements
    moved commute with those they moved past (:func:`_columns_of`), so each write gets what it would have got run
    alone, in order: its rows, its counts, its guard's verdict (a stopped write runs nothing more)."""
    bodies = [[s for s in steps if not s.fence] for steps in run]
    results = []
    for steps in run:
        result = WriteResult()
        result.counts.extend(1 for s in steps if s.fence)
        results.append(result)
    going = list(range(len(run)))
    for column in range(columns):
        first = bodies[0][column]
        sql = numbered(first.sql)
        tag = f"${len(first.params) + 1}::int"
        sql += f", {tag}" if _RETURNING.search(sql) else f" RETURNING {tag}"
        rows = await conn.fetchmany(sql, [(*bodies[w][column].params, w) for w in going])
        counts = dict.fromkeys(going, 0)
        for row in rows:
            counts[row[-1]] += 1
            if first.returning:
                results[row[-1]].rows.append(tuple(row)[:-1])
        for w in going:
            results[w].counts.append(counts[w])
            if first.guard and counts[w] == 0:
                results[w].ok = False
        going = [w for w in going if results[w].ok]
    for w in going:
        await _write(conn, bodies[w][columns:], held, results[w])
    return results


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
