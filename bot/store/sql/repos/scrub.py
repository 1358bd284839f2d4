"""Rewriting stored rows without some facts (what ``/memory forget`` asks): the places a fact can sit, their rows in
some chats, and the rewrite of those that changed, in one transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bot.store.sql.ops import Step
from bot.store.sql.sqlite import truncate_wal
from bot.store.sql.store import SqlStore
from bot.store.values import Rewrite

PLACES: dict[str, tuple[str, ...]] = {
    "trace_events": ("data",),
    "session_messages": ("data",),
    "runs": ("checkpoint",),
    "interrupts": ("prompt", "payload", "resolution"),
    "tool_ledger": ("args", "result"),
    "session_memory": ("value",),
    "chat_summaries": ("summary",),
}
"""Each place (a table) and its columns that can hold a fact."""
KEYS: dict[str, tuple[str, ...]] = {
    "trace_events": ("seq",),
    "session_messages": ("id",),
    "runs": ("id",),
    "interrupts": ("id",),
    "tool_ledger": ("run_id", "call_id"),
    "session_memory": ("chat_key", "agent", "name"),
    "chat_summaries": ("chat_key",),
}


def _in(values: Sequence[str]) -> str:
    return ", ".join("?" for _ in values)


class SqlScrub:
    """:class:`~bot.store.ports.ScrubRepo` on the SQL store."""

    places: Mapping[str, tuple[str, ...]] = PLACES

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def chats_of(self, identities: Iterable[str]) -> set[str]:
        chats: set[str] = set()
        for identity in identities:
            channel, _, user = identity.partition(":")
            rows = await self.store.read(
                "SELECT DISTINCT chat_key FROM runs WHERE user_id = ? AND chat_key LIKE ?", (user, channel + ":%")
            )
            chats.update(str(r[0]) for r in rows)
        return chats

    async def rows(
        self, place: str, chats: Sequence[str], hints: Sequence[str] | None
    ) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        keys, columns = KEYS[place], PLACES[place]
        where = ""
        params: tuple[str, ...] = ()
        if hints is not None:
            tests = [f"lower({c}) LIKE ?" for c in columns for _ in hints]
            where, params = " AND (" + " OR ".join(tests) + ")", tuple(f"%{h}%" for _ in columns for h in hints)
        in_chats = (
            f"run_id IN (SELECT id FROM runs WHERE chat_key IN ({_in(chats)}))"
            if place == "tool_ledger"
            else f"chat_key IN ({_in(chats)})"
        )
        rows = await self.store.read(
            f"SELECT {', '.join((*keys, *columns))} FROM {place} WHERE {in_chats}{where}", (*chats, *params)
        )
        return [(tuple(r[: len(keys)]), tuple(r[len(keys) :])) for r in rows]

    async def rewrite(self, rewrites: Sequence[Rewrite], chats: Callable[[str], bool]) -> bool | None:
        steps = []
        for change in rewrites:
            sets = ", ".join(f"{c} = ?" for c in change.values)
            match = " AND ".join(f"{k} = ?" for k in KEYS[change.place])
            steps.append(
                Step(f"UPDATE {change.place} SET {sets} WHERE {match}", (*change.values.values(), *change.key))
            )
        if not steps:
            return None
        await self.store.write(steps)
        self.store.forget_chats(chats)
        return await self._truncate_wal()

    async def _truncate_wal(self) -> bool | None:
        if self.store.dialect != "sqlite":
            return None
        path = self.store.url.split(":///", 1)[1] if ":///" in self.store.url else ""
        if path in ("", ":memory:"):
            return None
        return await asyncio.to_thread(truncate_wal, path, self.store.busy_timeout_ms)
