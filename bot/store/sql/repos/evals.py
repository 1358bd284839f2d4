"""Eval runs (table ``eval_runs``, written by ``bot eval``, read by the console), and what evals made from traces
read besides the trace events: a request's run and message, an interrupt's resolution, the answers kept, the
memories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step

COLUMNS = "id, suite, models, status, cases, trials, passed, pass_rate, cost, started_at"


class SqlEvalRuns:
    """:class:`~bot.store.ports.EvalRepo` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def add(self, line: Sequence[Any], data: str) -> None:
        await self.store.write(
            [Step(f"INSERT INTO eval_runs ({COLUMNS}, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*line, data))]
        )

    async def recent(self, suite: str | None, limit: int) -> list[tuple[Any, ...]]:
        where, params = ("WHERE suite = ? ", (suite,)) if suite else ("", ())
        return await self.store.read(
            f"SELECT {COLUMNS} FROM eval_runs {where}ORDER BY started_at DESC LIMIT ?", (*params, limit)
        )

    async def data(self, run_id: str) -> str | None:
        rows = await self.store.read("SELECT data FROM eval_runs WHERE id = ?", (run_id,))
        return str(rows[0][0]) if rows else None

    async def previous(self, suite: str, run_id: str, started: datetime) -> str | None:
        rows = await self.store.read(
            "SELECT data FROM eval_runs WHERE suite = ? AND id <> ? AND started_at <= ? "
            "ORDER BY started_at DESC LIMIT 1",
            (suite, run_id, started.replace(tzinfo=None)),
        )
        return str(rows[0][0]) if rows else None


class SqlReplaySource:
    """:class:`~bot.store.ports.ReplaySource` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def request(self, chat_key: str, correlation_id: str) -> tuple[str, int] | None:
        rows = await self.store.read(
            "SELECT user_id, history_cutoff FROM runs WHERE chat_key = ? AND correlation_id = ? "
            "ORDER BY created_at LIMIT 1",
            (chat_key, correlation_id),
        )
        if not rows or not rows[0][1]:
            return None
        return str(rows[0][0]), int(rows[0][1])

    async def message_data(self, message_id: int) -> str | None:
        rows = await self.store.read("SELECT data FROM session_messages WHERE id = ?", (message_id,))
        return str(rows[0][0]) if rows else None

    async def resolution(self, interrupt_id: str) -> str | None:
        rows = await self.store.read("SELECT resolution FROM interrupts WHERE id = ?", (interrupt_id,))
        return str(rows[0][0]) if rows and rows[0][0] else None

    async def answers(self, chat_key: str, first_id: int) -> list[str]:
        rows = await self.store.read(
            "SELECT data FROM session_messages WHERE chat_key = ? AND id >= ? AND role = 'assistant' ORDER BY id",
            (chat_key, first_id),
        )
        return [str(r[0]) for r in rows]

    async def history(self, chat_key: str, before_id: int, limit: int = 200) -> list[str]:
        rows = await self.store.read(
            "SELECT data FROM session_messages WHERE chat_key = ? AND id < ? ORDER BY id DESC LIMIT ?",
            (chat_key, before_id, limit),
        )
        return [str(r[0]) for r in reversed(rows)]

    async def memories(self) -> list[tuple[int, str]]:
        rows = await self.store.read("SELECT id, text FROM memories ORDER BY id")
        return [(int(i), str(t)) for i, t in rows]
