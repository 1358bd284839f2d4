"""One suite over the ports that read tables other repositories write, SQL (SQLite and PostgreSQL) and fake
(``tests/fakes/console_repos.py``): what the console lists, the backlog gauges, what replays read, and scrubbing.
Each test puts the same rows in the database (one insert per row) and in the fake's tables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.store.ports import BacklogCounts, ConsoleReads, MemoryRepo, ReplaySource, ScrubRepo
from bot.store.rows import timestamp
from bot.store.sql.ops import Step
from bot.store.sql.repos.console import SqlConsoleReads
from bot.store.sql.repos.evals import SqlReplaySource
from bot.store.sql.repos.memory import SqlMemoryStore
from bot.store.sql.repos.scrub import SqlScrub
from bot.store.sql.store import SqlStore
from bot.store.values import Rewrite
from tests.fakes.console_repos import FakeConsoleReads, FakeReplay, FakeScrub, FakeTables
from tests.fakes.memory_repos import FakeMemory

NOW = datetime(2026, 11, 26, 7, 0)


@dataclass
class Ports:
    kind: str
    put: Callable[..., Awaitable[None]]
    """``await put(table, **columns)``: a row in the tables the ports read."""
    console: ConsoleReads
    backlog: BacklogCounts
    replay: ReplaySource
    scrub: ScrubRepo
    memories: MemoryRepo


@pytest.fixture
async def ports(url_or_fake: str | None, open_store: Callable[..., Awaitable[SqlStore]]) -> Ports:
    if url_or_fake is None:
        tables, memories = FakeTables(), FakeMemory()

        async def put_fake(table: str, **row: Any) -> None:
            tables.insert(table, **row)

        console = FakeConsoleReads(tables)
        return Ports("fake", put_fake, console, console, FakeReplay(tables, memories), FakeScrub(tables), memories)
    store = await open_store(url_or_fake)

    async def put_sql(table: str, **row: Any) -> None:
        marks = ", ".join("?" for _ in row)
        await store.write([Step(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", tuple(row.values()))])

    sql = SqlConsoleReads(store)
    kind = "sqlite" if url_or_fake.startswith("sqlite") else "postgres"
    return Ports(kind, put_sql, sql, sql, SqlReplaySource(store), SqlScrub(store), SqlMemoryStore(store))


async def _run(ports: Ports, run_id: str, chat: str, request: str, user: str, minutes: int, cutoff: int = 0) -> None:
    at = NOW + timedelta(minutes=minutes)
    await ports.put(
        "runs", id=run_id, chat_key=chat, agent="chat", status="done", correlation_id=request, user_id=user,
        history_cutoff=cutoff, checkpoint=f'{{"said": "my pin is 4711 in {run_id}"}}', created_at=at, updated_at=at,
    )  # fmt: skip


async def _message(ports: Ports, n: int, chat: str, role: str, data: str, minutes: int) -> None:
    at = NOW + timedelta(minutes=minutes)
    agent = "chat" if role == "assistant" else None
    await ports.put("session_messages", id=n, chat_key=chat, role=role, agent=agent, data=data, created_at=at)


async def _interrupt(ports: Ports, iid: str, chat: str, status: str, resolution: str | None = None) -> None:
    await ports.put(
        "interrupts", id=iid, chat_key=chat, run_id="r1", kind="confirm", prompt="ok to pay?", payload="{}",
        choices="[]", nonce="n", requester="u1", status=status, resolution=resolution, created_at=NOW,
    )  # fmt: skip


async def _filled(ports: Ports) -> Ports:
    await _run(ports, "r1", "telegram:1", "q1", "7", 0, cutoff=2)
    await _run(ports, "r2", "telegram:1", "q1", "7", 5, cutoff=9)
    await _run(ports, "r3", "telegram:1", "q2", "7", 10)
    await _run(ports, "r4", "slack:C1", "q3", "7", 1)
    await _run(ports, "r5", "slack:C2", "q4", "U9", 2)
    await _message(ports, 1, "telegram:1", "user", '{"text": "hello there"}', 0)
    await _message(ports, 2, "telegram:1", "user", '{"text": "pay the bill"}', 1)
    await _message(ports, 3, "telegram:1", "assistant", '{"text": "paid"}', 2)
    await _message(ports, 4, "slack:C1", "user", '{"text": "weather?"}', 3)
    await _message(ports, 5, "telegram:1", "assistant", '{"text": "anything else?"}', 4)
    await _interrupt(ports, "i2", "telegram:1", "pending")
    await _interrupt(ports, "i1", "slack:C1", "pending")
    await _interrupt(ports, "i3", "telegram:1", "resolved", '{"approved": true}')
    return ports


async def test_backlog_and_pending_interrupts(ports: Ports) -> None:
    assert await ports.backlog.backlog() == (0, 0, 0)
    await _filled(ports)
    await ports.put("outbox", id=1, chat_key="telegram:1", message="{}", status="pending", created_at=NOW)
    await ports.put("outbox", id=2, chat_key="telegram:1", message="{}", status="sent", created_at=NOW)
    await ports.put(
        "inbox", seq=1, event_key="e1", chat_key="telegram:1", kind="message", event="{}", status="pending",
        received_at=NOW,
    )  # fmt: skip
    assert await ports.backlog.backlog() == (2, 1, 1)
    assert await ports.console.pending_count() == 2
    assert await ports.console.pending_ids() == ["i1", "i2"]
    assert await ports.console.pending_per_chat() == {"telegram:1": 1, "slack:C1": 1}


async def test_chats_conversations_and_runs(ports: Ports) -> None:
    await _filled(ports)
    chats = await ports.console.chats("", 10)
    assert [(key, n) for key, _at, n in chats] == [("telegram:1", 4), ("slack:C1", 1)], "by last activity"
    assert timestamp(chats[0][1]) == NOW + timedelta(minutes=4)
    assert [key for key, _at, _n in await ports.console.chats("", 1)] == ["telegram:1"]
    assert [key for key, _at, _n in await ports.console.chats("weather", 10)] == ["slack:C1"], "by a word"
    assert [key for key, _at, _n in await ports.console.chats("slack:", 10)] == ["slack:C1"], "by key"
    assert await ports.console.chats("100%_sure", 10) == []
    talk = await ports.console.conversation("telegram:1", 2)
    assert [(role, agent, data) for role, agent, data, _at in talk] == [
        ("assistant", "chat", '{"text": "paid"}'),
        ("assistant", "chat", '{"text": "anything else?"}'),
    ], "the last two, oldest first"
    assert [r[0] for r in await ports.console.chat_runs("telegram:1", 2)] == ["r3", "r2"]
    run = await ports.console.run("r4")
    assert run is not None and run[:5] == ("r4", "chat", "done", "q3", "7") and run[6] == "slack:C1"
    assert await ports.console.run("nope") is None
    assert await ports.console.agents_of(["r1", "r5", "nope"]) == {"r1": "chat", "r5": "chat"}
    assert await ports.console.agents_of([]) == {}


async def test_settings_and_strategies(ports: Ports) -> None:
    for key, name, value in [("telegram:1", "strategy", '{"kind": "fixed"}'), ("*", "strategy", '{"kind": "x"}')]:
        await ports.put("chat_settings", settings_key=key, name=name, value=value, updated_at=NOW)
    await ports.put("chat_settings", settings_key="telegram:1", name="model", value='"m1"', updated_at=NOW)
    assert sorted(await ports.console.chat_strategies()) == [
        ("*", '{"kind": "x"}'),
        ("telegram:1", '{"kind": "fixed"}'),
    ]
    assert dict(await ports.console.settings_view("telegram:1")) == {"strategy": {"kind": "fixed"}, "model": "m1"}
    assert dict(await ports.console.settings_view("slack:C1")) == {}


async def test_replays_read_the_request_its_messages_and_answers(ports: Ports) -> None:
    await _filled(ports)
    assert await ports.replay.request("telegram:1", "q1") == ("7", 2), "the request's first run"
    assert await ports.replay.request("telegram:1", "q2") is None, "no history cut-off"
    assert await ports.replay.request("telegram:1", "nope") is None
    assert await ports.replay.message_data(4) == '{"text": "weather?"}' and await ports.replay.message_data(99) is None
    assert await ports.replay.resolution("i3") == '{"approved": true}'
    assert await ports.replay.resolution("i2") is None and await ports.replay.resolution("nope") is None
    assert await ports.replay.answers("telegram:1", 3) == ['{"text": "paid"}', '{"text": "anything else?"}']
    assert await ports.replay.answers("telegram:1", 4) == ['{"text": "anything else?"}']
    assert await ports.replay.history("telegram:1", 5) == [
        '{"text": "hello there"}',
        '{"text": "pay the bill"}',
        '{"text": "paid"}',
    ]
    assert await ports.replay.history("telegram:1", 5, 1) == ['{"text": "paid"}'], "the newest, oldest first"
    assert await ports.replay.memories() == []
    await ports.memories.add("telegram:7", "Likes tea", "telegram:1", 10)
    await ports.memories.add("slack:U9", "Lives in Oslo", "slack:C2", 10)
    assert [text for _id, text in await ports.replay.memories()] == ["Likes tea", "Lives in Oslo"]


async def test_scrub_finds_and_rewrites_the_rows_of_a_persons_chats(ports: Ports) -> None:
    assert dict(ports.scrub.places) == {
        "trace_events": ("data",),
        "session_messages": ("data",),
        "runs": ("checkpoint",),
        "interrupts": ("prompt", "payload", "resolution"),
        "tool_ledger": ("args", "result"),
        "session_memory": ("value",),
        "chat_summaries": ("summary",),
    }
    await _filled(ports)
    await ports.put(
        "tool_ledger", run_id="r4", call_id="c1", name="pay", status="done", args='{"pin": "4711"}', result=None,
        updated_at=NOW,
    )  # fmt: skip
    await ports.put("chat_summaries", chat_key="slack:C1", summary="- PIN 4711", upto_id=4, updated_at=NOW)
    chats = await ports.scrub.chats_of(["telegram:7", "slack:7"])
    assert chats == {"telegram:1", "slack:C1"}, "not slack:C2 (another user) nor another channel's user 7"
    assert await ports.scrub.chats_of(["discord:7"]) == set()
    runs = await ports.scrub.rows("runs", sorted(chats), ["4711 in r2"])
    assert runs == [(("r2",), ('{"said": "my pin is 4711 in r2"}',))]
    assert len(await ports.scrub.rows("runs", sorted(chats), None)) == 4
    assert await ports.scrub.rows("tool_ledger", ["slack:C1"], ["4711"]) == [(("r4", "c1"), ('{"pin": "4711"}', None))]
    assert await ports.scrub.rows("tool_ledger", ["telegram:1"], ["4711"]) == []
    assert await ports.scrub.rows("chat_summaries", ["slack:C1"], ["pin 4711"]) == [(("slack:C1",), ("- PIN 4711",))]
    assert sorted(await ports.scrub.rows("interrupts", ["telegram:1"], ["approved"])) == [
        (("i3",), ("ok to pay?", "{}", '{"approved": true}'))
    ]
    assert await ports.scrub.rewrite([], lambda chat: True) is None, "nothing to rewrite"
    done = await ports.scrub.rewrite(
        [Rewrite("runs", ("r2",), {"checkpoint": '{"said": "my pin is [forgotten]"}'}),
         Rewrite("tool_ledger", ("r4", "c1"), {"args": '{"pin": "[forgotten]"}'})],
        lambda chat: chat in chats,
    )  # fmt: skip
    assert done is (True if ports.kind == "sqlite" else None), "the WAL truncated on SQLite"
    assert await ports.scrub.rows("runs", sorted(chats), ["4711 in r2"]) == []
    assert await ports.scrub.rows("tool_ledger", ["slack:C1"], ["forgotten"]) == [
        (("r4", "c1"), ('{"pin": "[forgotten]"}', None))
    ]
