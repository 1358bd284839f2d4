"""The ``scheduled_messages`` table: a message to send later, pending until it is sent (or cancelled)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step, outbox_step


class SqlScheduled:
    """:class:`~bot.store.ports.ScheduledRepo` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def add(
        self, sid: str, chat_key: str, text: str, due: datetime, by: str, at: datetime, limits: tuple[int, int]
    ) -> tuple[int, int] | None:
        """Store a pending message unless the chat or the person already has ``limits`` (per chat, per person)
        pending: checked in the insert itself, so calls made at once cannot all pass.  None when stored, else the
        (chat, person) counts that refused it."""
        per_chat, per_person = limits
        result = await self.store.write(
            [
                Step(
                    "INSERT INTO scheduled_messages (id, chat_key, text, due_at, status, created_by, created_at) "
                    "SELECT ?, ?, ?, ?, 'pending', ?, ? "
                    "WHERE (SELECT COUNT(*) FROM scheduled_messages WHERE chat_key = ? AND status = 'pending') < ? "
                    "AND (SELECT COUNT(*) FROM scheduled_messages WHERE created_by = ? AND status = 'pending') < ?",
                    (sid, chat_key, text, due, by, at, chat_key, per_chat, by, per_person),
                    guard=True,
                )
            ]
        )
        if result.ok:
            return None
        rows = await self.store.read(
            "SELECT (SELECT COUNT(*) FROM scheduled_messages WHERE chat_key = ? AND status = 'pending'), "
            "(SELECT COUNT(*) FROM scheduled_messages WHERE created_by = ? AND status = 'pending')",
            (chat_key, by),
        )
        return int(rows[0][0]), int(rows[0][1])

    async def pending(self, chat_key: str | None = None) -> list[tuple[str, str, str, datetime]]:
        sql = "SELECT id, chat_key, text, due_at FROM scheduled_messages WHERE status = 'pending'"
        params: tuple[Any, ...] = ()
        if chat_key is not None:
            sql += " AND chat_key = ?"
            params = (chat_key,)
        rows = await self.store.read(sql + " ORDER BY due_at", params)
        return [(str(i), str(c), str(t), _when(d)) for i, c, t, d in rows]

    async def get(self, sid: str) -> tuple[str, str] | None:
        rows = await self.store.read("SELECT chat_key, text FROM scheduled_messages WHERE id = ?", (sid,))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    async def cancel(self, chat_key: str, sid: str, by: str | None = None) -> bool:
        mine = " AND created_by = ?" if by is not None else ""
        result = await self.store.write(
            [
                Step(
                    "UPDATE scheduled_messages SET status = 'cancelled' WHERE id = ? AND chat_key = ? "
                    "AND status = 'pending'" + mine,
                    (sid, chat_key) if by is None else (sid, chat_key, by),
                    guard=True,
                )
            ]
        )
        return result.ok

    async def send(self, sid: str, chat_key: str, message_json: str) -> int | None:
        result = await self.store.write(
            [
                Step(
                    "UPDATE scheduled_messages SET status = 'sent' WHERE id = ? AND status = 'pending'",
                    (sid,),
                    guard=True,
                ),
                outbox_step(chat_key, message_json),
            ]
        )
        return int(result.rows[0][0]) if result.ok else None


def _when(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
