"""The PostgreSQL writer sends a batch in few round trips: consecutive writes of one statement with the same SQL
go pipelined together, writes of the same several statements through a function of the session (fence checks
included) or column by column (bot/store/sql/pg_shapes.py), and every fence check of a batch is one statement.  A run of
writes that goes in one pipelined call commits by itself (no BEGIN and COMMIT).  Each write still gets what it would
have got alone: its own rows, its own count, its own guard's verdict, in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.fencing import Fence, LeaseLost, fenced
from bot.store.base import StoreError
from bot.store.sql.ops import INSERT_MESSAGE, Step, outbox_step, utcnow
from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer


@pytest.fixture
async def store(postgres: PostgresServer) -> AsyncIterator[SqlStore]:
    opened = SqlStore(postgres.url(postgres.create_database()))
    await opened.start()
    yield opened
    await opened.close()


def message(chat: str, text: str) -> Step:
    return Step(INSERT_MESSAGE, (chat, "user", None, f'{{"text": "{text}"}}', utcnow()), returning=True)


async def test_a_run_of_inserts_returns_each_writes_own_rows_in_order(store: SqlStore) -> None:
    results = await asyncio.gather(*(store.write([message(f"console:{n % 3}", str(n))]) for n in range(40)))
    ids = [r.rows[0][0] for r in results]
    assert all(len(r.rows) == 1 and r.counts == [1] and r.ok for r in results)
    assert ids == sorted(ids) and len(set(ids)) == 40  # one row each, inserted in submission order
    stored = await store.read("SELECT id, data FROM session_messages ORDER BY id")
    assert [(i, d) for i, d in stored] == [(i, f'{{"text": "{n}"}}') for n, i in enumerate(ids)]


async def test_duplicates_in_one_run_stop_only_themselves(store: SqlStore) -> None:
    assert await store.receive([store.receive_step("t:1", "console:a", "message", "{}")]) == [True]
    steps = [store.receive_step(key, "console:a", "message", "{}") for key in ("t:2", "t:1", "t:3", "t:2", "t:4")]
    # Seen before (t:1) and twice in the same batch (the second t:2): refused; the rest stored.
    assert await store.receive(steps) == [True, False, True, False, True]
    rows = await store.read("SELECT event_key FROM inbox ORDER BY event_key")
    assert [r[0] for r in rows] == ["t:1", "t:2", "t:3", "t:4"]


async def test_a_guarded_update_counts_only_its_own_rows(store: SqlStore) -> None:
    await asyncio.gather(*(store.write([message("console:u", str(n))]) for n in range(3)))
    update = "UPDATE session_messages SET agent = ? WHERE data = ?"
    results = await asyncio.gather(
        *(store.write([Step(update, ("x", f'{{"text": "{n}"}}'), guard=True)]) for n in (0, 7, 2, 2))
    )
    assert [(r.ok, r.counts) for r in results] == [(True, [1]), (False, [0]), (True, [1]), (True, [1])]


async def test_fence_checks_of_a_batch_refuse_only_the_stale_tokens(store: SqlStore) -> None:
    stale = await store.raise_fence(1, "a")
    current = await store.raise_fence(1, "b")
    other = await store.raise_fence(2, "b")

    async def write(partition: int, token: int, text: str) -> Any:
        with fenced(Fence(partition, token)):
            try:
                return (await store.write([message("console:f", text)])).rows[0][0]
            except LeaseLost:
                return "refused"

    outcomes = await asyncio.gather(
        write(1, current, "a"), write(1, stale, "b"), write(2, other, "c"), write(1, current, "d")
    )
    assert outcomes[1] == "refused" and all(isinstance(o, int) for i, o in enumerate(outcomes) if i != 1)
    rows = await store.read("SELECT data FROM session_messages ORDER BY id")
    assert [r[0] for r in rows] == ['{"text": "a"}', '{"text": "c"}', '{"text": "d"}']


def accept(key: str, chat: str, text: str) -> list[Step]:
    """A write of three statements on three tables, guarded by its first (an event seen before stops it)."""
    return [store_receive(key, chat), message(chat, text), outbox_step(chat, f'"{text}"')]


def store_receive(key: str, chat: str) -> Step:
    return Step(
        "INSERT INTO inbox (event_key, chat_key, kind, event, status, received_at) "
        "VALUES (?, ?, 'message', '{}', 'pending', ?) ON CONFLICT (event_key) DO NOTHING",
        (key, chat, utcnow()),
        guard=True,
    )


def counting(chat: str) -> Step:
    """An outbox entry whose text is how many messages the chat has (it reads what ``message`` steps write)."""
    return Step(
        "INSERT INTO outbox (chat_key, message, interrupt_id, status, created_at) "
        "VALUES (?, (SELECT COUNT(*)::text FROM session_messages WHERE chat_key = ?), NULL, 'pending', ?) RETURNING id",
        (chat, chat, utcnow()),
        returning=True,
    )


async def test_writes_of_the_same_statements_get_what_each_would_alone(store: SqlStore) -> None:
    """One batch of writes of three statements each: each gets its own rows and counts; a duplicate event stops
    only its own write (and nothing of it after the guard is stored); the rows are stored in submission order."""
    keys = ["e:1", "e:2", "e:1", "e:3", "e:2", "e:4"]
    results = await asyncio.gather(*(store.write(accept(k, f"console:{n % 2}", str(n))) for n, k in enumerate(keys)))
    assert [r.ok for r in results] == [True, True, False, True, False, True]
    assert [r.counts for r in results] == [[1, 1, 1], [1, 1, 1], [0], [1, 1, 1], [0], [1, 1, 1]]
    assert [len(r.rows) for r in results] == [2, 2, 0, 2, 0, 2]  # the message's id, then the outbox entry's
    messages = await store.read("SELECT id, data FROM session_messages ORDER BY id")
    outbox = await store.read("SELECT id, message FROM outbox ORDER BY id")
    stored = [n for n, r in enumerate(results) if r.ok]
    assert [(i, d) for i, d in messages] == [(results[n].rows[0][0], f'{{"text": "{n}"}}') for n in stored]
    assert [(i, m) for i, m in outbox] == [(results[n].rows[1][0], f'"{n}"') for n in stored]


async def test_a_statement_reading_what_an_earlier_one_wrote_keeps_the_order(store: SqlStore) -> None:
    """The third statement counts the chat's messages, which the second one adds to: run column by column, the first
    write would count the second's message too.  Each counts what was there when it ran in submission order."""
    chat = "console:c"
    writes = [[store_receive(f"c:{n}", chat), message(chat, str(n)), counting(chat)] for n in range(4)]
    results = await asyncio.gather(*(store.write(w) for w in writes))
    assert all(r.ok and r.counts == [1, 1, 1] for r in results)
    counted = await store.read("SELECT message FROM outbox ORDER BY id")
    assert [r[0] for r in counted] == ["1", "2", "3", "4"]


async def test_writes_that_cannot_go_column_by_column_still_get_what_each_would_alone(store: SqlStore) -> None:
    """The same statements, the third reading what the second writes (so they run one write after another, in one
    round trip): a duplicate event stops its own write, and the others get their own rows and counts, in order."""
    keys = ["d:1", "d:2", "d:1", "d:3"]
    chats = ["console:x", "console:y", "console:x", "console:x"]
    writes = [
        [
            store_receive(k, chat),
            message(chat, str(n)),
            counting(chat),
        ]
        for n, (k, chat) in enumerate(zip(keys, chats, strict=True))
    ]
    results = await asyncio.gather(*(store.write(w) for w in writes))
    assert [(r.ok, r.counts, len(r.rows)) for r in results] == [
        (True, [1, 1, 1], 2),
        (True, [1, 1, 1], 2),
        (False, [0], 0),
        (True, [1, 1, 1], 2),
    ]
    messages = await store.read("SELECT id FROM session_messages ORDER BY id")
    outbox = await store.read("SELECT id, chat_key, message FROM outbox ORDER BY id")
    assert [r[0] for r in messages] == [results[n].rows[0][0] for n in (0, 1, 3)]
    assert [tuple(r) for r in outbox] == [
        (results[0].rows[1][0], "console:x", "1"),
        (results[1].rows[1][0], "console:y", "1"),
        (results[3].rows[1][0], "console:x", "2"),
    ]


async def test_a_write_of_several_statements_alone_in_its_batch(store: SqlStore) -> None:
    """One at a time (a batch each): the same rows, counts and guard verdicts as in a batch."""
    outcomes, chat = [], "console:s"
    for n, key in enumerate(["s:1", "s:1", "s:2"]):
        result = await store.write([store_receive(key, chat), message(chat, str(n)), counting(chat)])
        outcomes.append((result.ok, result.counts, len(result.rows)))
    assert outcomes == [(True, [1, 1, 1], 2), (False, [0], 0), (True, [1, 1, 1], 2)]
    assert [r[0] for r in await store.read("SELECT message FROM outbox ORDER BY id")] == ["1", "2"]


async def test_a_failing_run_fails_only_its_own_writes(store: SqlStore) -> None:
    """Runs of one call each commit by themselves: a write the database refuses fails its run, in order with the
    others, and the runs before and after it are stored."""
    bad = Step("INSERT INTO outbox (chat_key, message, status, created_at) VALUES (?, NULL, 'pending', ?)", ("x", 1))
    writes = [[message("console:r", "a")], [message("console:r", "b")], [bad], accept("r:1", "console:r", "c")]
    outcomes = await asyncio.gather(*(store.write(w) for w in writes), return_exceptions=True)
    assert [isinstance(o, StoreError) for o in outcomes] == [False, False, True, False]
    rows = await store.read("SELECT data FROM session_messages ORDER BY id")
    assert [r[0] for r in rows] == ['{"text": "a"}', '{"text": "b"}', '{"text": "c"}']


async def test_a_stale_fence_stops_a_write_of_several_statements_with_nothing_stored(store: SqlStore) -> None:
    """The fence check runs inside the write's function: a stale token refuses that write alone, before any of its
    statements ran; the current token's writes beside it are stored."""
    stale = await store.raise_fence(3, "a")
    current = await store.raise_fence(3, "b")

    async def write(token: int, key: str) -> str:
        with fenced(Fence(3, token)):
            try:
                return "ok" if (await store.write(accept(key, "console:g", key))).ok else "not applied"
            except LeaseLost:
                return "refused"

    outcomes = await asyncio.gather(write(current, "g:1"), write(stale, "g:2"), write(current, "g:3"))
    assert outcomes == ["ok", "refused", "ok"]
    assert [r[0] for r in await store.read("SELECT event_key FROM inbox ORDER BY event_key")] == ["g:1", "g:3"]
    assert len(await store.read("SELECT id FROM outbox")) == 2
