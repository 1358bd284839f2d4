"""The pairing tables: one-time codes given to unknown senders and the senders admins let in with them.

A sender has at most one code at a time (asking again gives the same one until it expires), a channel at most
``max_pending`` codes waiting (a stranger flood cannot fill the table), and a code is used up by the approval that
lets its sender in: the code's delete (a guard), the sender's row and the audit row commit together.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot import ids
from bot.store.rows import timestamp
from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step, steps_of
from bot.store.values import CODE_LENGTH, Change, Paired, WaitingCode, normal_code, shown_code

__all__ = ["CODE_LENGTH", "Paired", "PairingStore", "WaitingCode", "new_code", "normal_code", "shown_code"]


def new_code() -> str:
    return ids.new_code(CODE_LENGTH)


_CODE_COLUMNS = "code, channel, user_id, user_name, chat_key, created_at, expires_at"


class PairingStore:
    """The ``pairing_codes`` and ``paired_senders`` tables on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def issue(
        self, channel: str, user_id: str, user_name: str, chat_key: str, minutes: float, max_pending: int
    ) -> WaitingCode | None:
        """The sender's code: the one they have, else a new one; None when ``max_pending`` codes of the channel
        wait already."""
        now = self.store.clock.utcnow()
        held = await self._code_of(channel, user_id, now)
        if held is not None:
            return held
        code, expires = new_code(), now + timedelta(minutes=minutes)
        insert = Step(
            f"INSERT INTO pairing_codes ({_CODE_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ? "
            "WHERE (SELECT COUNT(*) FROM pairing_codes WHERE channel = ?) < ? "
            "ON CONFLICT DO NOTHING RETURNING code",
            (code, channel, user_id, user_name[:255], chat_key, now, expires, channel, max_pending),
            returning=True,
        )
        # Expired codes go first (theirs too): a sender past their code's time gets a new one.
        await self.store.write([Step("DELETE FROM pairing_codes WHERE expires_at <= ?", (now,)), insert])
        return await self._code_of(channel, user_id, now)

    async def _code_of(self, channel: str, user_id: str, now: datetime) -> WaitingCode | None:
        rows = await self.store.read(
            f"SELECT {_CODE_COLUMNS} FROM pairing_codes WHERE channel = ? AND user_id = ? AND expires_at > ?",
            (channel, user_id, now),
        )
        return _waiting(rows[0]) if rows else None

    async def find(self, code: str) -> WaitingCode | None:
        """The sender a code that has not expired was given to."""
        rows = await self.store.read(
            f"SELECT {_CODE_COLUMNS} FROM pairing_codes WHERE code = ? AND expires_at > ?",
            (normal_code(code), self.store.clock.utcnow()),
        )
        return _waiting(rows[0]) if rows else None

    async def waiting(self) -> list[WaitingCode]:
        """Every code not expired, newest first."""
        rows = await self.store.read(
            f"SELECT {_CODE_COLUMNS} FROM pairing_codes WHERE expires_at > ? ORDER BY created_at DESC",
            (self.store.clock.utcnow(),),
        )
        return [_waiting(row) for row in rows]

    async def approve(self, code: WaitingCode, by: str, extra: Sequence[Change] = (), *, admin: bool = False) -> bool:
        """Let ``code``'s sender in (an admin too with ``admin``) and use the code up, with ``extra`` (the audit
        row) in the same commit; False when the code expired or was used meanwhile."""
        now = self.store.clock.utcnow()
        result = await self.store.write(
            [
                Step("DELETE FROM pairing_codes WHERE code = ? AND expires_at > ?", (code.code, now), guard=True),
                Step("DELETE FROM paired_senders WHERE channel = ? AND user_id = ?", (code.channel, code.user_id)),
                Step(
                    "INSERT INTO paired_senders (channel, user_id, user_name, approved_by, approved_at, is_admin) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (code.channel, code.user_id, code.user_name, by, now, admin),
                ),
                *steps_of(extra),
            ]
        )
        return result.ok

    async def unpair(self, channel: str, user_id: str, extra: Sequence[Change] = ()) -> bool:
        """Let a paired sender out again (with ``extra`` in the same commit); False when they were not paired."""
        result = await self.store.write(
            [
                Step("DELETE FROM paired_senders WHERE channel = ? AND user_id = ?", (channel, user_id), guard=True),
                *steps_of(extra),
            ]
        )
        return result.ok

    async def is_paired(self, channel: str, user_id: str) -> bool:
        return await self.standing(channel, user_id) is not None

    async def standing(self, channel: str, user_id: str) -> bool | None:
        """None: not paired; else whether the paired sender is an admin too."""
        rows = await self.store.read(
            "SELECT is_admin FROM paired_senders WHERE channel = ? AND user_id = ?", (channel, user_id)
        )
        return bool(rows[0][0]) if rows else None

    async def admin_channels(self) -> set[str]:
        """The channels with an admin let in by pairing (``bot pair approve CODE --admin``)."""
        rows = await self.store.read("SELECT DISTINCT channel FROM paired_senders WHERE is_admin = ?", (True,))
        return {str(channel) for (channel,) in rows}

    async def paired(self) -> list[Paired]:
        rows = await self.store.read(
            "SELECT channel, user_id, user_name, approved_by, approved_at, is_admin FROM paired_senders "
            "ORDER BY approved_at DESC"
        )
        return [
            Paired(c, u, n, b, timestamp(at) or self.store.clock.utcnow(), bool(admin))
            for c, u, n, b, at, admin in rows
        ]


def _waiting(row: tuple[object, ...]) -> WaitingCode:
    code, channel, user_id, name, chat, created, expires = row
    return WaitingCode(str(code), str(channel), str(user_id), str(name), str(chat), _when(created), _when(expires))


def _when(value: object) -> datetime:
    found = timestamp(value)
    assert found is not None
    return found
