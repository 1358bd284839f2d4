"""The ``web_sessions`` table: the console's sign-ins, by the digest of their cookie's token."""

from __future__ import annotations

from datetime import datetime

from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step


class SqlWebSessions:
    """:class:`~bot.store.ports.WebSessionRepo` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def add(self, digest: str, user: str, now: datetime, expires: datetime) -> None:
        await self.store.write(
            [
                Step("DELETE FROM web_sessions WHERE expires_at < ?", (now,)),
                Step(
                    "INSERT INTO web_sessions (id, user_name, created_at, expires_at) VALUES (?, ?, ?, ?)",
                    (digest, user, now, expires),
                ),
            ]
        )

    async def user(self, digest: str, now: datetime) -> str | None:
        rows = await self.store.read(
            "SELECT user_name FROM web_sessions WHERE id = ? AND expires_at > ?", (digest, now)
        )
        return str(rows[0][0]) if rows else None

    async def remove(self, digest: str) -> None:
        await self.store.write([Step("DELETE FROM web_sessions WHERE id = ?", (digest,))])
