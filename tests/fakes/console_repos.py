"""In-memory versions of the ports that read tables other repositories write: what the console lists
(:class:`~bot.store.ports.ConsoleReads`), the backlog gauges (:class:`~bot.store.ports.BacklogCounts`), what replays
read (:class:`~bot.store.ports.ReplaySource`) and rewriting rows without some facts
(:class:`~bot.store.ports.ScrubRepo`); held to the SQL ones by ``tests/store/test_console_contract.py``.

They read one :class:`FakeTables`: rows by table as dicts of column values, which a test puts there (the SQL
versions read the same rows put in the database).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.store.values import Rewrite
from tests.fakes.memory_repos import FakeMemory

__all__ = ["KEYS", "PLACES", "FakeBacklog", "FakeConsoleReads", "FakeReplay", "FakeScrub", "FakeTables"]

AUTO_IDS = {"session_messages": "id", "outbox": "id", "inbox": "seq", "trace_events": "seq", "audit_log": "id"}
"""The tables whose key the database numbers, and that key's column."""


class FakeTables:
    """Rows of the tables, each a dict of its columns (as the schema names them)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def insert(self, table: str, **row: Any) -> dict[str, Any]:
        """Add a row (numbered like the database when its table numbers rows and no key is given)."""
        rows = self.rows.setdefault(table, [])
        key = AUTO_IDS.get(table)
        if key is not None and row.get(key) is None:
            row[key] = max((int(r[key]) for r in rows), default=0) + 1
        rows.append(row)
        return row

    def of(self, table: str, **where: Any) -> list[dict[str, Any]]:
        """The table's rows whose columns have the values ``where`` gives, in insertion order."""
        return [r for r in self.rows.get(table, []) if all(r.get(c) == v for c, v in where.items())]


class FakeBacklog:
    """:class:`~bot.store.ports.BacklogCounts` over :class:`FakeTables`."""

    def __init__(self, tables: FakeTables | None = None) -> None:
        self.tables = tables if tables is not None else FakeTables()

    async def backlog(self) -> tuple[int, int, int]:
        pending, outbox, inbox = (len(self.tables.of(t, status="pending")) for t in ("interrupts", "outbox", "inbox"))
        return pending, outbox, inbox


class FakeConsoleReads(FakeBacklog):
    """:class:`~bot.store.ports.ConsoleReads` (and the backlog, as the SQL one) over :class:`FakeTables`."""

    async def settings_view(self, settings_key: str) -> Mapping[str, Any]:
        return {
            str(r["name"]): json.loads(r["value"]) for r in self.tables.of("chat_settings", settings_key=settings_key)
        }

    async def pending_count(self) -> int:
        return len(self.tables.of("interrupts", status="pending"))

    async def pending_ids(self) -> list[str]:
        return sorted(str(r["id"]) for r in self.tables.of("interrupts", status="pending"))

    async def agents_of(self, run_ids: Sequence[str]) -> dict[str, str]:
        return {str(r["id"]): str(r["agent"]) for r in self.tables.of("runs") if r["id"] in run_ids}

    async def chats(self, query: str, limit: int) -> list[tuple[str, datetime, int]]:
        found: dict[str, tuple[datetime, int]] = {}
        for r in self.tables.of("session_messages"):
            if query and query not in r["chat_key"] and query not in r["data"]:
                continue
            last, count = found.get(r["chat_key"], (r["created_at"], 0))
            found[r["chat_key"]] = (max(last, r["created_at"]), count + 1)
        ranked = sorted(found.items(), key=lambda item: item[1][0], reverse=True)
        return [(key, last, count) for key, (last, count) in ranked[:limit]]

    async def pending_per_chat(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.tables.of("interrupts", status="pending"):
            counts[r["chat_key"]] = counts.get(r["chat_key"], 0) + 1
        return counts

    async def conversation(self, chat_key: str, limit: int) -> list[tuple[str, str, str, Any]]:
        rows = sorted(self.tables.of("session_messages", chat_key=chat_key), key=lambda r: r["id"])[-limit:]
        return [(str(r["role"]), str(r.get("agent") or ""), str(r["data"]), r["created_at"]) for r in rows]

    async def chat_runs(self, chat_key: str, limit: int) -> list[tuple[Any, ...]]:
        rows = sorted(self.tables.of("runs", chat_key=chat_key), key=lambda r: r["created_at"], reverse=True)
        return [_pick(r, "id", "agent", "status", "correlation_id", "user_id", "created_at") for r in rows[:limit]]

    async def run(self, run_id: str) -> tuple[Any, ...] | None:
        rows = self.tables.of("runs", id=run_id)
        columns = ("id", "agent", "status", "correlation_id", "user_id", "created_at", "chat_key")
        return _pick(rows[0], *columns) if rows else None

    async def chat_strategies(self) -> list[tuple[str, str]]:
        return [(str(r["settings_key"]), str(r["value"])) for r in self.tables.of("chat_settings", name="strategy")]


class FakeReplay:
    """:class:`~bot.store.ports.ReplaySource` over :class:`FakeTables` and a :class:`FakeMemory` (the memories)."""

    def __init__(self, tables: FakeTables | None = None, memories: FakeMemory | None = None) -> None:
        self.tables = tables if tables is not None else FakeTables()
        self.memory = memories if memories is not None else FakeMemory()

    async def request(self, chat_key: str, correlation_id: str) -> tuple[str, int] | None:
        runs = self.tables.of("runs", chat_key=chat_key, correlation_id=correlation_id)
        first = min(runs, key=lambda r: r["created_at"], default=None)
        if first is None or not first.get("history_cutoff"):
            return None
        return str(first["user_id"]), int(first["history_cutoff"])

    async def message_data(self, message_id: int) -> str | None:
        rows = self.tables.of("session_messages", id=message_id)
        return str(rows[0]["data"]) if rows else None

    async def resolution(self, interrupt_id: str) -> str | None:
        rows = self.tables.of("interrupts", id=interrupt_id)
        return str(rows[0]["resolution"]) if rows and rows[0].get("resolution") else None

    def _messages(self, chat_key: str) -> list[dict[str, Any]]:
        return sorted(self.tables.of("session_messages", chat_key=chat_key), key=lambda r: r["id"])

    async def answers(self, chat_key: str, first_id: int) -> list[str]:
        return [str(r["data"]) for r in self._messages(chat_key) if r["id"] >= first_id and r["role"] == "assistant"]

    async def history(self, chat_key: str, before_id: int, limit: int = 200) -> list[str]:
        before = [str(r["data"]) for r in self._messages(chat_key) if r["id"] < before_id]
        return before[-limit:] if limit > 0 else []

    async def memories(self) -> list[tuple[int, str]]:
        return sorted((m.id, m.text) for m in self.memory.memories.values())


PLACES: dict[str, tuple[str, ...]] = {
    "trace_events": ("data",),
    "session_messages": ("data",),
    "runs": ("checkpoint",),
    "interrupts": ("prompt", "payload", "resolution"),
    "tool_ledger": ("args", "result"),
    "session_memory": ("value",),
    "chat_summaries": ("summary",),
}
"""Each place (a table) and its columns that can hold a fact (the SQL store's, checked by the contract)."""
KEYS: dict[str, tuple[str, ...]] = {
    "trace_events": ("seq",),
    "session_messages": ("id",),
    "runs": ("id",),
    "interrupts": ("id",),
    "tool_ledger": ("run_id", "call_id"),
    "session_memory": ("chat_key", "agent", "name"),
    "chat_summaries": ("chat_key",),
}


class FakeScrub:
    """:class:`~bot.store.ports.ScrubRepo` over :class:`FakeTables`; a rewrite returns None (no WAL to truncate, as
    on PostgreSQL) and records which chats' cached state it dropped (:attr:`forgotten`)."""

    places: Mapping[str, tuple[str, ...]] = PLACES

    def __init__(self, tables: FakeTables | None = None) -> None:
        self.tables = tables if tables is not None else FakeTables()
        self.forgotten: list[Callable[[str], bool]] = []

    async def chats_of(self, identities: Iterable[str]) -> set[str]:
        chats: set[str] = set()
        for identity in identities:
            channel, _, user = identity.partition(":")
            chats.update(
                r["chat_key"] for r in self.tables.of("runs", user_id=user) if r["chat_key"].startswith(channel + ":")
            )
        return chats

    def _in_chats(self, place: str, chats: Sequence[str]) -> list[dict[str, Any]]:
        if place == "tool_ledger":
            runs = {r["id"] for r in self.tables.of("runs") if r["chat_key"] in chats}
            return [r for r in self.tables.of(place) if r["run_id"] in runs]
        return [r for r in self.tables.of(place) if r["chat_key"] in chats]

    async def rows(
        self, place: str, chats: Sequence[str], hints: Sequence[str] | None
    ) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        keys, columns = KEYS[place], PLACES[place]
        found = []
        for row in self._in_chats(place, chats):
            texts = [str(row[c]).lower() for c in columns if row.get(c) is not None]
            if hints is None or any(h in text for text in texts for h in hints):
                found.append((_pick(row, *keys), _pick(row, *columns)))
        return found

    async def rewrite(self, rewrites: Sequence[Rewrite], chats: Callable[[str], bool]) -> bool | None:
        if not rewrites:
            return None
        for change in rewrites:
            where = dict(zip(KEYS[change.place], change.key, strict=True))
            for row in self.tables.of(change.place, **where):
                row.update(change.values)
        self.forgotten.append(chats)
        return None


def _pick(row: Mapping[str, Any], *columns: str) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in columns)
