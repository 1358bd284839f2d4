"""What the web console and the health gauges read: pending interrupts, chats by activity, a chat's history and
runs, the strategies set (reads only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.store.sql.store import SqlStore

BACKLOG = (
    "SELECT (SELECT COUNT(*) FROM interrupts WHERE status = 'pending'), "
    "(SELECT COUNT(*) FROM outbox WHERE status = 'pending'), "
    "(SELECT COUNT(*) FROM inbox WHERE status = 'pending')"
)


class SqlConsoleReads:
    """:class:`~bot.store.ports.ConsoleReads` and :class:`~bot.store.ports.BacklogCounts` on the SQL store."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def settings_view(self, settings_key: str) -> Mapping[str, Any]:
        return await self.store.settings_view(settings_key)

    async def backlog(self) -> tuple[int, int, int]:
        [(pending, outbox, inbox)] = await self.store.read(BACKLOG)
        return int(pending), int(outbox), int(inbox)

    async def pending_count(self) -> int:
        [(count,)] = await self.store.read("SELECT COUNT(*) FROM interrupts WHERE status = 'pending'")
        return int(count)

    async def pending_ids(self) -> list[str]:
        rows = await self.store.read("SELECT id FROM interrupts WHERE status = 'pending' ORDER BY id")
        return [str(r[0]) for r in rows]

    async def agents_of(self, run_ids: Sequence[str]) -> dict[str, str]:
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        rows = await self.store.read(f"SELECT id, agent FROM runs WHERE id IN ({marks})", tuple(run_ids))
        return {str(rid): str(agent) for rid, agent in rows}

    async def chats(self, query: str, limit: int) -> list[tuple[str, datetime, int]]:
        params: tuple[Any, ...] = ()
        where = ""
        if query:
            like = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where = "WHERE chat_key LIKE ? ESCAPE '\\' OR data LIKE ? ESCAPE '\\'"
            params = (like, like)
        rows = await self.store.read(
            "SELECT chat_key, MAX(created_at), COUNT(*) FROM session_messages "
            f"{where} GROUP BY chat_key ORDER BY MAX(created_at) DESC LIMIT ?",
            (*params, limit),
        )
        return [(str(k), at, int(n)) for k, at, n in rows]

    async def pending_per_chat(self) -> dict[str, int]:
        rows = await self.store.read(
            "SELECT chat_key, COUNT(*) FROM interrupts WHERE status = 'pending' GROUP BY chat_key"
        )
        return {str(k): int(n) for k, n in rows}

    async def conversation(self, chat_key: str, limit: int) -> list[tuple[str, str, str, Any]]:
        rows = await self.store.read(
            "SELECT role, agent, data, created_at FROM session_messages WHERE chat_key = ? ORDER BY id DESC LIMIT ?",
            (chat_key, limit),
        )
        return [(str(role), str(agent or ""), str(data), at) for role, agent, data, at in reversed(rows)]

    async def chat_runs(self, chat_key: str, limit: int) -> list[tuple[Any, ...]]:
        return await self.store.read(
            "SELECT id, agent, status, correlation_id, user_id, created_at FROM runs WHERE chat_key = ? "
            "ORDER BY created_at DESC LIMIT ?",
            (chat_key, limit),
        )

    async def run(self, run_id: str) -> tuple[Any, ...] | None:
        rows = await self.store.read(
            "SELECT id, agent, status, correlation_id, user_id, created_at, chat_key FROM runs WHERE id = ?", (run_id,)
        )
        return rows[0] if rows else None

    async def chat_strategies(self) -> list[tuple[str, str]]:
        rows = await self.store.read("SELECT settings_key, value FROM chat_settings WHERE name = 'strategy'")
        return [(str(k), str(v)) for k, v in rows]
