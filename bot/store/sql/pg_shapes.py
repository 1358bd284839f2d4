"""How the PostgreSQL writer runs a batch's writes of several statements in few round trips.

asyncpg pipelines only the same statement over many parameter sets (``executemany``).  So consecutive writes made of
the same statements (a *shape*) go either

- **column by column** (:func:`by_columns`): each statement for every write still going, pipelined, when the
  statements moved commute with those they moved past (:func:`columns_of`); or
- **through a function** (:class:`ShapeFunctions`): a PL/pgSQL function of the session's own (``pg_temp``) runs one
  write's statements in order, fence checks and guards and all, and the calls for every write are pipelined: each
  write runs exactly as it would alone, in order, one round trip for all.  One call is one statement, so such a run
  needs no ``BEGIN`` and ``COMMIT`` of its own either (:meth:`~bot.store.sql.postgres.PgWriter._transaction`).

Either way each write gets what it would have got run alone: its rows, its counts, its guard's verdict.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import asyncpg

from bot.store.sql.ops import Step, WriteResult, numbered

log = logging.getLogger(__name__)

Shape = tuple[tuple[str, bool, bool], ...]
"""A write's statements: (SQL, guard, returning) each."""
CallShape = tuple[tuple[str, bool, bool, bool], ...]
"""A write's steps, fence checks included: (SQL, guard, returning, fence) each (what a function runs)."""
MAX_FUNCTIONS = 64
"""Functions made per connection at most (writes whose statements vary in number, an ``IN`` list, would make one
per length)."""


def _count(status: str) -> int:
    # asyncpg returns the command tag: "INSERT 0 1", "UPDATE 3", "DELETE 0".
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


async def write_steps(
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


LINKED_TABLES = (
    "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal "
    "UNION SELECT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid) "
    "WHERE k.contype = 'f' "
    "UNION SELECT tablename::text FROM pg_rules"
)


async def linked_tables(conn: asyncpg.Connection) -> frozenset[str]:
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
def columns_of(sqls: tuple[str, ...], linked: frozenset[str]) -> int:
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


def shape_of(steps: Sequence[Step], held: set[tuple[Any, ...]]) -> Shape | None:
    """A write of several statements whose fence checks all come first and passed: its statements (SQL, guard,
    returning); None for any other write."""
    body = [s for s in steps if not s.fence]
    fences = len(steps) - len(body)
    if len(body) < 2 or any(s.fence for s in steps[fences:]) or any(s.params not in held for s in steps[:fences]):
        return None
    if any(s.many for s in body):
        return None
    return tuple((s.sql, s.guard, s.returning) for s in body)


def call_shape(steps: Sequence[Step]) -> CallShape | None:
    """A write a function can run: two steps or more, each an ``INSERT``, ``UPDATE`` or ``DELETE`` or a fence check;
    its steps (SQL, guard, returning, fence); None for any other write."""
    if len(steps) < 2 or any(s.many or (not s.fence and _table_and_words(s.sql) is None) for s in steps):
        return None
    return tuple((s.sql, s.guard, s.returning, s.fence) for s in steps)


def run_of_one_shape(
    groups: Sequence[Sequence[Step]], start: int, held: set[tuple[Any, ...]], linked: frozenset[str]
) -> tuple[Sequence[Sequence[Step]], int, Shape | None]:
    """``groups[start]`` and the writes right after it made of the same statements, how many leading statements of
    theirs may go column by column (:func:`columns_of`), and their shape (None: a write no run can have)."""
    shape = shape_of(groups[start], held)
    if shape is None:
        return groups[start : start + 1], 0, None
    columns = columns_of(tuple(sql for sql, _, _ in shape), linked)
    end = start + 1
    while end < len(groups) and shape_of(groups[end], held) == shape:
        end += 1
    return groups[start:end], columns, shape


async def by_columns(
    conn: asyncpg.Connection, run: Sequence[Sequence[Step]], columns: int, held: set[tuple[Any, ...]]
) -> list[WriteResult]:
    """Writes of the same statements: each of the first ``columns`` statements for every write still going, pipelined
    (one round trip each, as :func:`_one_each`), then the rest of each write one statement at a time.  The statements
    moved commute with those they moved past (:func:`columns_of`), so each write gets what it would have got run
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
        await write_steps(conn, bodies[w][columns:], held, results[w])
    return results


_EXACT_IN_JSON = {"int2", "int4", "int8", "text", "varchar", "bool"}
"""Types a returned row may have to come back through JSON as the same Python value."""
_OUT = "bot_step int, bot_n bigint, bot_r json"


class ShapeFunctions:
    """The functions made on one connection (its session's ``pg_temp``), by shape (:func:`call_shape`); None: that
    shape cannot have one.

    Made outside any transaction (:meth:`make`), so a failure to make one (no right to create temporary objects, a
    type that does not come back through JSON) changes nothing but the way the shape's writes run.
    """

    def __init__(self) -> None:
        self._made: dict[CallShape, str | None] = {}
        self._names = 0
        """Names given so far: never one twice (a shape made again after a reset must not meet another shape's
        function of that name, with other argument types: an overload its calls could not choose from)."""

    def reset(self) -> None:
        """The session ended (or a transaction that may have made one was rolled back): nothing is known made."""
        self._made.clear()

    def name(self, shape: CallShape | None) -> str | None:
        return None if shape is None else self._made.get(shape)

    async def make(self, conn: asyncpg.Connection, groups: Sequence[Sequence[Step]]) -> None:
        """A function for each shape of the writes of ``groups``, if not tried before (up to ``MAX_FUNCTIONS``)."""
        for steps in groups:
            shape = call_shape(steps)
            if shape is None or shape in self._made or len(self._made) >= MAX_FUNCTIONS:
                continue
            name = f"bot_write_{self._names}"
            self._names += 1
            try:
                made = await _create(conn, shape, name)
            except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.info("store: writes of %d statements run one by one (no function for them: %s)", len(shape), exc)
                made = False
            self._made[shape] = name if made else None


def _numbered_from(sql: str, first: int) -> str:
    """``?`` placeholders as ``$first, $first+1, ...`` (a statement's parameters among the function's)."""
    counter = iter(range(first, first + 10_000))
    return re.sub(r"\?", lambda _m: f"${next(counter)}", sql)


_SELECT = re.compile(r"\s*SELECT\s", re.IGNORECASE)


async def _create(conn: asyncpg.Connection, shape: CallShape, name: str) -> bool:
    types: list[str] = []
    body = ["#variable_conflict use_column", "BEGIN"]
    cte = "bot_rows"
    for i, (sql, guard, returning, fence) in enumerate(shape):
        statement = await conn.prepare(numbered(sql))
        params = statement.get_parameters()
        if returning:
            columns = statement.get_attributes()
            if any(c.type.name not in _EXACT_IN_JSON for c in columns) or len({c.name for c in columns}) < len(columns):
                return False
        text = _numbered_from(sql, len(types) + 1)
        types += [f'"{p.schema}"."{p.name}"' for p in params]
        if fence:  # a fence check (SELECT ... FOR SHARE): its share lock holds until the call's transaction ends
            check = _SELECT.match(text)
            if check is None or returning:
                return False
            body.append(f"PERFORM {text[check.end() :]};")
        elif returning:
            body.append(f"RETURN QUERY WITH {cte} AS ({text}) SELECT {i}, NULL::bigint, row_to_json({cte}) FROM {cte};")
        else:
            body.append(f"{text};")
        body.append(f"GET DIAGNOSTICS bot_n = ROW_COUNT; bot_step := {i}; bot_r := NULL; RETURN NEXT;")
        if guard:
            body.append("IF bot_n = 0 THEN RETURN; END IF;")
    body.append("END")
    source = "\n".join(body)
    if "$bot_write$" in source:
        return False
    schema = "pg_temp"
    await conn.execute(
        f"CREATE OR REPLACE FUNCTION {schema}.{name}({', '.join(types)}) RETURNS TABLE ({_OUT}) "
        f"LANGUAGE plpgsql AS $bot_write$\n{source}\n$bot_write$"
    )
    return True


async def by_function(conn: asyncpg.Connection, run: Sequence[Sequence[Step]], name: str) -> list[WriteResult]:
    """Writes of one shape (:func:`call_shape`) through its function (:class:`ShapeFunctions`), fence checks
    included, the calls pipelined: one round trip, and one statement per write (atomic without a transaction)."""
    count = sum(len(s.params) for s in run[0])
    schema = "pg_temp"
    call = ", ".join(f"${n}" for n in range(1, count + 1))
    sql = f"SELECT bot_step, bot_n, bot_r, ${count + 1}::int FROM {schema}.{name}({call})"
    rows = await conn.fetchmany(sql, [(*(p for s in steps for p in s.params), w) for w, steps in enumerate(run)])
    results = [WriteResult() for _ in run]
    for step, n, returned, w in rows:
        result = results[w]
        if returned is not None:
            result.rows.append(tuple(json.loads(returned).values()))
            continue
        result.counts.append(n)
        if run[w][step].guard and n == 0:
            result.ok = False
            result.fenced = run[w][step].fence
    return results
