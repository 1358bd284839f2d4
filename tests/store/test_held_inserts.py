"""Held inserts: an inbound event's row rides with its handler's first write, or goes on its own.

Real stores (SQLite and PostgreSQL: ``make_store``; the full disk is SQLite's); what is checked is what the rows
say, what each waiter learns, and how many writes the writer committed (``stats()["writes"]``: one per
:class:`~bot.store.sql.ops.Write`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agents.messages import Message
from bot.store.base import EventNotStored, StoreError
from bot.store.sql.ops import Step
from bot.store.sql.store import SqlStore
from tests.store.full_disk import FullDisk
from tests.waiting import CEILING_S, eventually

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


def _insert(store: SqlStore, key: str) -> Step:
    return store.receive_step(key, CHAT, "message", '{"text": "hi"}')


def _row(tmp_path: Path, key: str) -> tuple[str, str] | None:
    """The inbox row as another connection sees it (committed, not cached)."""
    with sqlite3.connect(tmp_path / "bot.db") as conn:
        found = conn.execute("SELECT status, event FROM inbox WHERE event_key = ?", (key,)).fetchone()
    return None if found is None else (found[0], found[1])


async def _committed(store: SqlStore, key: str) -> tuple[str, str] | None:
    """The inbox row as the read path's connection sees it (committed)."""
    rows = await store.read("SELECT status, event FROM inbox WHERE event_key = ?", (key,))
    return None if not rows else (str(rows[0][0]), str(rows[0][1]))


async def test_the_handlers_first_write_carries_the_row_in_one_write(make_store: Any) -> None:
    store = await make_store()
    writes = store.stats()["writes"]
    receipt = store.receive_held("console:m1", _insert(store, "console:m1"))
    assert await store.accept("console:m1", CHAT, Message.user("hi")) is True
    assert await asyncio.wait_for(receipt, CEILING_S) is True  # a new row, committed with the accept
    assert store.stats()["writes"] - writes == 1
    assert await _committed(store, "console:m1") == ("done", "")
    assert [m.text for m in await store.history(CHAT)] == ["hi"]


async def test_an_insert_nobody_takes_commits_on_its_own(make_store: Any) -> None:
    store = await make_store()
    receipt = store.receive_held("console:m2", _insert(store, "console:m2"))
    assert await asyncio.wait_for(receipt, CEILING_S) is True  # two turns of the loop, then queued like any write
    assert await _committed(store, "console:m2") == ("pending", '{"text": "hi"}')
    # Its handler, coming later, writes after it as before.
    assert await store.accept("console:m2", CHAT, None) is True
    assert await _committed(store, "console:m2") == ("done", "")


async def test_a_redelivery_of_a_handled_event_is_not_new_and_not_handled_again(make_store: Any) -> None:
    store = await make_store()
    first = store.receive_held("console:m3", _insert(store, "console:m3"))
    assert await store.accept("console:m3", CHAT, Message.user("hi")) is True
    assert await first is True
    again = store.receive_held("console:m3", _insert(store, "console:m3"))
    assert await store.accept("console:m3", CHAT, Message.user("hi")) is False  # handled before
    assert await again is False  # a duplicate: the platform may be told "received"
    assert [m.text for m in await store.history(CHAT)] == ["hi"]


async def test_a_redelivery_of_a_stored_unhandled_event_is_handled_by_it(make_store: Any) -> None:
    store = await make_store()
    assert await store.receive([_insert(store, "console:m4")]) == [True]  # stored, its handling failed
    receipt = store.receive_held("console:m4", _insert(store, "console:m4"))
    assert await store.accept("console:m4", CHAT, Message.user("hi")) is True
    assert await receipt is False  # not new: stored before
    assert await _committed(store, "console:m4") == ("done", "")


async def test_when_the_carrying_write_fails_neither_is_stored(store: SqlStore, tmp_path: Path) -> None:
    disk = FullDisk(store, tmp_path / "bot.db")
    await disk.fill()
    receipt = store.receive_held("console:m5", _insert(store, "console:m5"))
    with pytest.raises(EventNotStored):
        await store.accept("console:m5", CHAT, Message.user("hi"))
    with pytest.raises(StoreError):
        await receipt
    await disk.clear()
    assert _row(tmp_path, "console:m5") is None
    assert await store.history(CHAT) == []


async def test_a_handler_after_a_failed_insert_writes_nothing(store: SqlStore, tmp_path: Path) -> None:
    """The insert went on its own (nobody took it in time) and the disk refused it: the platform hears "not
    stored", so the handler that comes afterwards must not store its handling either, even once the disk has room
    again (the platform's redelivery is handled instead)."""
    disk = FullDisk(store, tmp_path / "bot.db")
    await disk.fill()
    receipt = store.receive_held("console:m6", _insert(store, "console:m6"))
    with pytest.raises(StoreError):
        await receipt
    await disk.clear()
    with pytest.raises(EventNotStored):
        await store.accept("console:m6", CHAT, Message.user("hi"))
    assert _row(tmp_path, "console:m6") is None
    # Once the handler is done, nothing is kept: the redelivery's handling goes through.
    store.handled_held("console:m6")
    assert await store.receive([_insert(store, "console:m6")]) == [True]
    assert await store.accept("console:m6", CHAT, Message.user("hi")) is True


async def test_a_handler_that_writes_nothing_does_not_keep_the_row_back(make_store: Any) -> None:
    store = await make_store()
    receipt = store.receive_held("console:m7", _insert(store, "console:m7"))
    store.handled_held("console:m7")  # e.g. its handler failed before its first write
    assert await asyncio.wait_for(receipt, CEILING_S) is True
    assert await _committed(store, "console:m7") == (
        "pending",
        '{"text": "hi"}',
    )  # recovery hands it on after a restart


async def test_held_inserts_are_committed_by_a_flush_and_by_closing(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    first = store.receive_held("console:m8", _insert(store, "console:m8"))
    await store.flush()
    assert _row(tmp_path, "console:m8") == ("pending", '{"text": "hi"}')
    assert await first is True
    second = asyncio.ensure_future(store.receive_held("console:m9", _insert(store, "console:m9")))
    await store.close()
    assert await second is True
    assert _row(tmp_path, "console:m9") == ("pending", '{"text": "hi"}')


async def test_a_cancelled_waiter_leaves_the_insert_to_commit(make_store: Any) -> None:
    store = await make_store()
    waiting = asyncio.ensure_future(store.receive_held("console:m10", _insert(store, "console:m10")))
    await asyncio.sleep(0)
    waiting.cancel()

    async def committed() -> bool:
        return await _committed(store, "console:m10") is not None

    await eventually(committed, what="the insert committed")
