"""A full disk at the SQLite seam, for tests of what the gateway does when the database cannot take writes."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from agents.messages import Message
from bot.store.base import StoreError
from bot.store.sql.ops import MARK_HANDLED, Step, utcnow
from bot.store.sql.store import SqlStore
from tests.waiting import eventually

BIG = 2**31 - 2
"""``max_page_count`` when the disk is not full."""


class FullDisk:
    """A full disk at the SQLite seam, on the gateway's own database connection.

    ``PRAGMA max_page_count`` (run as a write of its own on the store's writer connection) caps the file at its
    current size: any write that needs a new page fails with SQLITE_FULL, "database or disk is full", as on a
    full disk.  Writes that fit in the room left in existing pages would still succeed, so :meth:`fill` also
    takes that room in the two tables every message writes to (the inbox when it arrives, the history when it
    is taken) with rows of the smallest size: from then on every write that stores or takes a message fails.
    :meth:`clear` lifts the cap (the filler rows stay, like the files that filled a disk).
    """

    def __init__(self, store: SqlStore, path: Path) -> None:
        self.store, self.path = store, path
        self.filled: dict[str, int] = {}
        """Rows of the smallest size that took the room left, per table."""
        self._keys = iter(range(10**9))

    async def fill(self) -> None:
        await self.store.write([Step("PRAGMA max_page_count = 1", (), returning=True)])  # clamped to the size now
        self.filled = {
            "history": await self._take_room(lambda n: self.store.append("telegram:0", [Message.user("")] * n)),
            "inbox": await self._take_room(self._inbox_rows),
        }

    async def clear(self) -> None:
        async def lifted() -> bool:
            # Its own batch may fail with the writes of others: tried until it is through.
            with contextlib.suppress(StoreError):
                await self.store.write([Step(f"PRAGMA max_page_count = {BIG}", (), returning=True)])
                return True
            return False

        await eventually(lifted, what="the cap lifted")

    async def _inbox_rows(self, n: int) -> None:
        """``n`` inbox rows of the smallest size (handled ones: nothing to hand on), in one write."""
        now = utcnow()
        await self.store.write(
            [Step(MARK_HANDLED, (f"filler:{next(self._keys)}", "telegram:0", now)) for _ in range(n)]
        )

    @staticmethod
    async def _take_room(write: Callable[[int], Awaitable[object]]) -> int:
        """Write ever smaller batches of rows until a single row no longer fits; how many fitted."""
        batch, fitted = 128, 0
        while True:
            try:
                await write(batch)
                fitted += batch
            except StoreError as exc:
                assert "database or disk is full" in str(exc), exc
                if batch == 1:
                    return fitted
                batch //= 2
