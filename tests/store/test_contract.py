"""The Store contract, run over SQLite and PostgreSQL (``db_url`` is parametrised)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import asyncpg
import pytest

from agents.messages import Message, ToolCall, ToolResult
from bot.clock import FakeClock
from bot.store import StoreError
from bot.store.sql.ops import Step
from bot.store.sql.store import SqlStore

pytestmark = pytest.mark.timeout(60)


async def _db_history(url: str, chat: str, **options: Any) -> list[Message]:
    """The chat's history as a cold store (empty caches) reads it from the database."""
    cold = SqlStore(url, **options)
    await cold.start()
    try:
        return await cold.history(chat)
    finally:
        await cold.close()


async def _count(store: SqlStore, table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
    rows = await store.read(f"SELECT count(*) FROM {table} {where}", params)
    return int(rows[0][0])


async def test_accept_records_an_event_once(make_store) -> None:
    store = await make_store()
    assert await store.accept("tg:1", "tg:c", Message.user("hi")) is True
    assert await store.accept("tg:1", "tg:c", Message.user("hi again")) is False
    assert [m.text for m in await store.history("tg:c")] == ["hi"]
    assert await _count(store, "session_messages") == 1


async def test_accept_without_message_only_dedupes(make_store) -> None:
    store = await make_store()
    assert await store.accept("tg:2", "tg:c", None) is True
    assert await store.accept("tg:2", "tg:c", None) is False
    assert await store.history("tg:c") == []


async def test_duplicates_inside_one_batch(make_store) -> None:
    store = await make_store()
    results = await asyncio.gather(*(store.accept("same", "c", Message.user(str(i))) for i in range(10)))
    assert sorted(results) == [False] * 9 + [True]
    assert len(await store.history("c")) == 1


async def test_history_order_limits_and_rich_messages(make_store) -> None:
    store = await make_store(history_limit=5)
    call = ToolCall(id="c1", name="clock", args={"tz": "UTC"})
    rich = [
        Message(role="assistant", tool_calls=(call,), agent="react"),
        Message.results([ToolResult(call_id="c1", name="clock", content={"now": "noon"})]),
    ]
    await store.append("c", rich)
    for i in range(6):
        await store.append("c", [Message.user(f"m{i}")])
    assert [m.text for m in await store.history("c")] == ["m1", "m2", "m3", "m4", "m5"]
    assert [m.text for m in await store.history("c", 2)] == ["m4", "m5"]
    assert len(await store.history("c", 100)) == 5  # never more than history_limit
    assert await store.history("c", 0) == []
    await store.append("d", rich)
    assert await store.history("d") == rich
    assert await _db_history(store.url, "d") == rich


async def test_history_is_served_from_cache_after_the_first_load(make_store) -> None:
    store = await make_store()
    await store.history("c")
    reads = store.stats()["reads"]
    for i in range(20):
        assert await store.accept(f"e{i}", "c", Message.user(f"q{i}"))
        assert (await store.history("c"))[-1].text == f"q{i}"
        await store.append("c", [Message.assistant(f"a{i}")])
        await store.set_chat_setting("c", "n", i)
    await store.chat_settings("c")
    assert store.stats()["reads"] == reads + 1  # only the settings' first load
    assert await store.chat_settings("c") == {"n": 19}
    assert store.stats()["reads"] == reads + 1


async def test_clear_history(make_store) -> None:
    store = await make_store()
    await store.append("c", [Message.user("a"), Message.assistant("b")])
    await store.append("other", [Message.user("keep")])
    await store.clear_history("c")
    assert await store.history("c") == []
    await store.append("c", [Message.user("after")])
    assert [m.text for m in await store.history("c")] == ["after"]
    assert [m.text for m in await _db_history(store.url, "c")] == ["after"]
    assert [m.text for m in await store.history("other")] == ["keep"]


async def test_chat_settings(make_store) -> None:
    store = await make_store()
    assert await store.chat_settings("tg:1") == {}
    await store.set_chat_setting("tg:1", "strategy", "rule")
    await store.set_chat_setting("tg:1", "grants", ("clock", "search"))
    await store.set_chat_setting("tg:1", "strategy", "llm")
    await store.set_chat_setting("tg:2", "strategy", "hybrid")
    settings = await store.chat_settings("tg:1")
    assert settings == {"strategy": "llm", "grants": ["clock", "search"]}
    settings["strategy"] = "mutated by the caller"
    assert (await store.chat_settings("tg:1"))["strategy"] == "llm"
    await store.set_chat_setting("tg:1", "grants", None)
    await store.set_chat_setting("tg:1", "never-set", None)
    assert await store.chat_settings("tg:1") == {"strategy": "llm"}
    assert await store.chat_settings("tg:2") == {"strategy": "hybrid"}


async def test_caches_agree_with_the_database_after_a_restart(make_store, db_url) -> None:
    store = await make_store(history_limit=10)
    rng = random.Random(7)
    for i in range(120):
        chat = f"chat{rng.randrange(6)}"
        op = rng.random()
        if op < 0.5:
            await store.accept(f"ev{i}", chat, Message.user(f"u{i}"))
        elif op < 0.8:
            await store.append(chat, [Message.assistant(f"a{i}"), Message.user(f"x{i}")])
        elif op < 0.85:
            await store.clear_history(chat)
        else:
            await store.set_chat_setting(chat, f"k{i % 3}", None if i % 4 == 0 else i)
        if i % 10 == 0:
            await store.history(chat)  # some chats cached early, some late
    chats = [f"chat{c}" for c in range(6)]
    warm = {c: (await store.history(c), await store.chat_settings(c)) for c in chats}
    await store.close()
    restarted = await make_store(history_limit=10)
    assert {c: (await restarted.history(c), await restarted.chat_settings(c)) for c in chats} == warm
    assert restarted.stats()["reads"] == 2 * len(chats)


async def test_history_retention_runs_in_the_writer_not_per_message(make_store, db_url) -> None:
    store = await make_store(history_limit=5, retention_interval_s=3600)
    for i in range(12):
        await store.append("c", [Message.user(f"m{i}")])
    await store.append("small", [Message.user("only")])
    assert await _count(store, "session_messages", "WHERE chat_key = ?", ("c",)) == 12
    await store.prune()
    assert await _count(store, "session_messages", "WHERE chat_key = ?", ("c",)) == 5
    assert await _count(store, "session_messages", "WHERE chat_key = ?", ("small",)) == 1
    newest = [f"m{i}" for i in range(7, 12)]
    assert [m.text for m in await store.history("c")] == newest
    assert [m.text for m in await _db_history(db_url, "c", history_limit=5)] == newest


async def test_retention_runs_on_its_interval(make_store) -> None:
    clock = FakeClock()
    store = await make_store(history_limit=3, retention_interval_s=5, clock=clock)
    for i in range(10):
        await store.append("c", [Message.user(f"m{i}")])
    await store.flush()
    assert await _count(store, "session_messages") == 10, "not due yet"
    await clock.advance(5)
    await store.flush()  # any write lets the writer notice the pass is due
    assert await _count(store, "session_messages") == 3
    assert store.stats()["retention_passes"] >= 1


async def test_processed_ids_retention_drops_the_oldest(make_store) -> None:
    store = await make_store(processed_ids_limit=10, retention_interval_s=3600)
    for i in range(25):
        assert await store.accept(f"e{i:02d}", "c", None)
    await store.prune()
    assert await _count(store, "inbox") == 10
    assert await store.accept("e24", "c", None) is False  # newest kept
    assert await store.accept("e00", "c", None) is True  # oldest forgotten
    await store.prune()
    assert await _count(store, "inbox") == 10


async def test_retention_hook_adds_statements_to_each_pass(make_store) -> None:
    store = await make_store(retention_interval_s=3600)
    store.add_retention(lambda: [Step("DELETE FROM inbox WHERE event_key LIKE ?", ("tmp:%",))])
    await store.accept("tmp:1", "c", None)
    await store.accept("keep:1", "c", None)
    await store.prune()
    rows = await store.read("SELECT event_key FROM inbox")
    assert [r[0] for r in rows] == ["keep:1"]


async def test_many_chats_at_once_share_commits(make_store, db_url) -> None:
    store = await make_store()

    async def chat(c: int) -> None:
        for i in range(5):
            assert await store.accept(f"{c}-{i}", f"chat{c}", Message.user(f"q{c}-{i}"))
            await store.append(f"chat{c}", [Message.assistant(f"a{c}-{i}")])

    await asyncio.gather(*(chat(c) for c in range(50)))
    stats = store.stats()
    assert stats["writes"] == 500
    assert stats["commits"] < stats["writes"] / 5, stats  # group commit batches
    assert stats["largest_batch"] > 1
    for c in (0, 17, 49):
        expected = [t for i in range(5) for t in (f"q{c}-{i}", f"a{c}-{i}")]
        assert [m.text for m in await store.history(f"chat{c}")] == expected
        assert [m.text for m in await _db_history(db_url, f"chat{c}")] == expected


async def test_cache_is_bounded_by_chat_count(make_store) -> None:
    store = await make_store(cache_chats=3)
    for c in range(10):
        await store.append(f"chat{c}", [Message.user(f"hello {c}")])
        await store.history(f"chat{c}")
    assert store.stats()["cached_chats"] == 3
    assert [m.text for m in await store.history("chat0")] == ["hello 0"]  # evicted, reloaded


async def test_loads_racing_writes_stay_consistent(make_store, db_url) -> None:
    # A tiny cache forces loads while the same chats are being written.
    store = await make_store(cache_chats=2, history_limit=50)
    chats = [f"chat{c}" for c in range(8)]

    async def writer(chat: str) -> None:
        for i in range(25):
            await store.append(chat, [Message.user(f"{chat}-{i}")])

    async def reader() -> None:
        rng = random.Random(3)
        for _ in range(150):
            await store.history(rng.choice(chats))

    await asyncio.gather(*(writer(c) for c in chats), reader(), reader())
    assert store.stats()["reads"] > len(chats)  # chats were evicted and reloaded meanwhile
    for chat in chats:
        expected = [f"{chat}-{i}" for i in range(25)]
        assert [m.text for m in await store.history(chat)] == expected
        assert [m.text for m in await _db_history(db_url, chat, history_limit=50)] == expected


async def test_failed_commit_fails_every_waiter_of_the_batch(make_store, db_url) -> None:
    store = await make_store(busy_timeout_ms=100)
    await store.append("c", [Message.user("before")])
    await store.history("c")
    async with _locked(db_url):
        results = await asyncio.gather(
            *(store.accept(f"e{i}", "c", Message.user(f"lost {i}")) for i in range(10)), return_exceptions=True
        )
        assert all(isinstance(r, StoreError) for r in results), results
        assert [m.text for m in await store.history("c")] == ["before"]
    assert store.stats()["failed_batches"] >= 1
    # Nothing of the failed batch was recorded: the same events are new.
    assert await store.accept("e0", "c", Message.user("retried"))
    assert [m.text for m in await store.history("c")] == ["before", "retried"]
    assert [m.text for m in await _db_history(db_url, "c")] == ["before", "retried"]


class _locked:
    """Another connection holds the write lock (SQLite) or the tables (PostgreSQL)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._release: Any = None

    async def __aenter__(self) -> None:
        if self.url.startswith("sqlite"):
            import sqlite3

            conn = sqlite3.connect(self.url.split(":///", 1)[1], isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")

            async def release_sqlite() -> None:
                conn.execute("ROLLBACK")
                conn.close()

            self._release = release_sqlite
            return
        pg = await asyncpg.connect(self.url)
        tx = pg.transaction()
        await tx.start()
        await pg.execute("LOCK TABLE inbox, session_messages IN ACCESS EXCLUSIVE MODE")

        async def release_pg() -> None:
            await tx.rollback()
            await pg.close()

        self._release = release_pg

    async def __aexit__(self, *exc: object) -> None:
        await self._release()


async def test_closed_store_refuses_work(make_store) -> None:
    store = await make_store()
    await store.close()
    with pytest.raises(StoreError):
        await store.accept("e", "c", Message.user("x"))
    with pytest.raises(StoreError):
        await store.history("c")
    with pytest.raises(StoreError):
        await SqlStore(store.url).append("c", [Message.user("never started")])
