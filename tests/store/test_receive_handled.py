"""SQLite: a held event's insert and its mark as handled are one statement (``RECEIVE_HANDLED``) when the handler's
write marks that very event first; the rows and what each waiter learns are those of the two statements.

The statements are counted on the writer's own connection (SQLite's trace callback, set after the store opened).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.messages import Message
from bot.store.sql.store import SqlStore
from tests.waiting import CEILING_S

pytestmark = pytest.mark.timeout(60)

CHAT = "console:c1"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    try:
        yield store
    finally:
        await store.close()


def _inbox_statements(store: SqlStore) -> list[str]:
    """Every statement on the inbox the writer runs from now on."""
    seen: list[str] = []
    conn = store._writer._conn  # type: ignore[union-attr]  # the writer's connection: what it really runs
    assert isinstance(conn, sqlite3.Connection)
    conn.set_trace_callback(lambda sql: seen.append(sql) if "INTO inbox" in sql else None)
    return seen


def _row(tmp_path: Path, key: str) -> tuple[str, str, str] | None:
    with sqlite3.connect(tmp_path / "bot.db") as conn:
        found = conn.execute("SELECT status, kind, event FROM inbox WHERE event_key = ?", (key,)).fetchone()
    return None if found is None else (found[0], found[1], found[2])


async def test_a_new_event_and_its_handling_take_one_inbox_statement(store: SqlStore, tmp_path: Path) -> None:
    statements = _inbox_statements(store)
    receipt = store.receive_held("console:m1", store.receive_step("console:m1", CHAT, "message", '{"text":"hi"}'))
    assert await store.accept("console:m1", CHAT, Message.user("hi")) is True
    assert await asyncio.wait_for(receipt, CEILING_S) is True
    assert len(statements) == 1
    assert _row(tmp_path, "console:m1") == ("done", "message", "")
    # The message's own row id came back to the write (the history cache has it).
    assert [m.text for m in await store.history(CHAT)] == ["hi"]
    assert len(await store.read("SELECT id FROM session_messages")) == 1


async def test_pending_and_handled_rows_are_told_apart(store: SqlStore, tmp_path: Path) -> None:
    step = store.receive_step("console:m2", CHAT, "message", '{"text":"hi"}')
    assert await store.receive([step]) == [True]  # stored, its first handling failed: pending
    statements = _inbox_statements(store)
    again = store.receive_held("console:m2", store.receive_step("console:m2", CHAT, "message", '{"text":"hi"}'))
    assert await store.accept("console:m2", CHAT, Message.user("hi")) is True  # handled by the redelivery
    assert await again is False  # stored before: a duplicate receipt
    assert _row(tmp_path, "console:m2") == ("done", "message", "")
    third = store.receive_held("console:m2", store.receive_step("console:m2", CHAT, "message", '{"text":"hi"}'))
    assert await store.accept("console:m2", CHAT, Message.user("hi")) is False  # handled before: nothing more
    assert await third is False
    assert len(statements) == 2
    assert [m.text for m in await store.history(CHAT)] == ["hi"]
