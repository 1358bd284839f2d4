"""The ``trace_events`` table: batched multi-row inserts, age retention, and the reads of ``/trace``, the console,
``bot trace`` and the evals made from traces.

A row is ``(id, chat_key, correlation_id, run_id, agent, type, data JSON, created_at)``; reads that follow a chat
put its ``seq`` (arrival order) first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from itertools import chain
from typing import Any

from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step, utcnow

TraceRow = tuple[Any, ...]
"""``id, chat_key, correlation_id, run_id, agent, type, data, created_at`` (with ``seq`` first where said)."""

COLUMNS = "id, chat_key, correlation_id, run_id, agent, type, data, created_at"
INSERT_HEAD = f"INSERT INTO trace_events ({COLUMNS}) VALUES "
ROW = "(?, ?, ?, ?, ?, ?, ?, ?)"
ROWS_PER_INSERT = 100  # 800 parameters: within every SQLite build's and PostgreSQL's limits
PRUNE = (
    # Rows are in time order by seq: delete the prefix older than the cutoff (no index on the time).
    "DELETE FROM trace_events WHERE seq < COALESCE("
    "(SELECT seq FROM trace_events WHERE created_at >= ? ORDER BY seq LIMIT 1), "
    "(SELECT COALESCE(MAX(seq), 0) + 1 FROM trace_events))"
)


def sqlite_now() -> str:
    """Now (naive UTC), as the SQLite store's ``datetime`` adapter writes it (``2026-01-02 03:04:05.000006``): made
    here, it costs less than the adapter in the ``executemany`` of each trace row (measured: see bench/README.md,
    "Per-message micro-optimisations")."""
    return utcnow().isoformat(" ", "microseconds")


class SqlTraces:
    """:class:`~bot.store.ports.TraceRepo` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store
        self.stamp: Callable[[], datetime | str] = sqlite_now if store.many_rows else utcnow
        """Now, as a row's ``created_at`` is best handed to :meth:`add` (SQLite: its text, PostgreSQL: a
        ``datetime``)."""

    async def add(self, rows: Sequence[TraceRow]) -> None:
        """Insert ``rows`` in one group commit: on SQLite one ``executemany`` (about half the cost a row of multi-row
        inserts, whose statements differ by their row count and are prepared each time; measured: see
        bench/README.md, "Per-message micro-optimisations"); elsewhere multi-row inserts (one round trip per 100
        rows)."""
        if self.store.many_rows:
            await self.store.write([Step(INSERT_HEAD + ROW, tuple(rows), many=True)])
            return
        steps = []
        for i in range(0, len(rows), ROWS_PER_INSERT):
            chunk = rows[i : i + ROWS_PER_INSERT]
            steps.append(Step(INSERT_HEAD + ", ".join([ROW] * len(chunk)), tuple(chain.from_iterable(chunk))))
        await self.store.write(steps)

    def keep_days(self, days: float) -> None:
        """Delete rows older than ``days`` in the store's retention passes."""
        self.store.add_retention(lambda: [Step(PRUNE, (utcnow() - timedelta(days=days),))])

    async def requests(self, chat_key: str, last: int) -> list[str]:
        """The correlation ids of the chat's last ``last`` requests, oldest first."""
        rows = await self.store.read(
            "SELECT correlation_id, MAX(seq) AS newest FROM trace_events WHERE chat_key = ? "
            "GROUP BY correlation_id ORDER BY newest DESC LIMIT ?",
            (chat_key, max(1, last)),
        )
        return [str(r[0]) for r in reversed(rows)]

    async def events(self, correlation_id: str, chat_key: str | None = None) -> list[TraceRow]:
        """One request's rows in order (``chat_key`` makes it an index lookup)."""
        if chat_key is None:
            sql = f"SELECT {COLUMNS} FROM trace_events WHERE correlation_id = ? ORDER BY seq"
            return await self.store.read(sql, (correlation_id,))
        sql = f"SELECT {COLUMNS} FROM trace_events WHERE chat_key = ? AND correlation_id = ? ORDER BY seq"
        return await self.store.read(sql, (chat_key, correlation_id))

    async def newest_chat(self) -> str | None:
        """The chat of the newest row."""
        rows = await self.store.read("SELECT chat_key FROM trace_events ORDER BY seq DESC LIMIT 1")
        return str(rows[0][0]) if rows else None

    async def after(self, chat_key: str, seq: int) -> list[TraceRow]:
        """The chat's rows after ``seq``, ``seq`` first in each."""
        return await self.store.read(
            f"SELECT seq, {COLUMNS} FROM trace_events WHERE chat_key = ? AND seq > ? ORDER BY seq", (chat_key, seq)
        )

    async def first_routes(self, since: datetime) -> list[tuple[str, int]]:
        """(chat, seq of its first ``route`` event) of the chats routed since ``since``, in that order."""
        rows = await self.store.read(
            "SELECT chat_key, MIN(seq) FROM trace_events WHERE type = 'route' AND created_at >= ? "
            "GROUP BY chat_key ORDER BY MIN(seq)",
            (since.replace(tzinfo=None),),
        )
        return [(str(c), int(s)) for c, s in rows]
