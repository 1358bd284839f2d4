"""One suite over both chat stores: :class:`~bot.store.sql.store.SqlStore` (SQLite and PostgreSQL) and the in-memory
:class:`~tests.fakes.chat_store.FakeChatStore` unit tests use, so the fake is held to what the store does: events
stored once, history in order and within its limit, settings, pending events, the cached chat state, fencing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from agents.messages import Message
from bot.fencing import Fence, LeaseLost, fenced
from bot.store.bundle import PartitionedStore
from bot.store.ports import ChatStore, TurnStore
from bot.store.sql.store import SqlStore
from bot.store.values import utcnow
from tests.fakes.chat_store import FakeChatStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def make(
    url_or_fake: str | None, open_store: Callable[..., Awaitable[SqlStore]]
) -> Callable[..., Awaitable[ChatStore]]:
    """``await make(history_limit=...)``: a chat store, SQL (on each database) or fake."""

    async def make(**options: Any) -> ChatStore:
        if url_or_fake is None:
            return FakeChatStore(**options)
        return await open_store(url_or_fake, **options)

    return make


def _typed() -> None:
    """The fake is each of its ports (mypy checks these)."""
    fake = FakeChatStore()
    _chat: ChatStore = fake
    _turn: TurnStore = fake
    _partitioned: PartitionedStore = fake


async def test_an_event_is_accepted_once(make: Callable[..., Any]) -> None:
    store: TurnStore = await make()
    assert await store.accept("tg:1", "tg:c", Message.user("hi"))
    assert not await store.accept("tg:1", "tg:c", Message.user("hi again"))
    assert await store.accept("tg:2", "tg:c", None), "no message: only the event is recorded"
    assert not await store.accept("tg:2", "tg:c", None)
    assert [m.text for m in (await store.chat_state("tg:c")).messages] == ["hi"]


async def test_inbox_events_are_stored_once_and_pending_until_handled(make: Callable[..., Any]) -> None:
    store: ChatStore = await make()
    before = utcnow() - timedelta(seconds=1)
    steps = [store.receive_step(f"e{i}", "tg:c", "message", f'{{"n": {i}}}') for i in range(3)]
    assert await store.receive(steps) == [True, True, True]
    assert await store.receive([store.receive_step("e1", "tg:c", "message", "{}")]) == [False]
    assert await store.event_status("e1") == "pending" and await store.event_status("nope") is None
    assert await store.pending_events() == [("message", f'{{"n": {i}}}') for i in range(3)], "oldest first"
    assert await store.pending_events(before) == []
    assert len(await store.pending_events(utcnow() + timedelta(seconds=1))) == 3
    assert await store.accept("e1", "tg:c", Message.user("one"))
    assert await store.event_status("e1") == "done"
    assert [data for _, data in await store.pending_events()] == ['{"n": 0}', '{"n": 2}']
    assert not await store.accept("e1", "tg:c", None), "handled once"


async def test_a_held_insert_says_whether_the_event_is_new(make: Callable[..., Any]) -> None:
    store: ChatStore = await make()
    assert await store.receive_held("h1", store.receive_step("h1", "tg:c", "message", "{}"))
    store.handled_held("h1")
    assert not await store.receive_held("h1", store.receive_step("h1", "tg:c", "message", "{}"))
    store.handled_held("h1")
    assert await store.event_status("h1") == "pending"


async def test_history_order_and_limits(make: Callable[..., Any]) -> None:
    store: ChatStore = await make(history_limit=5)
    for i in range(7):
        await store.append("c", [Message.user(f"m{i}")])
    await store.append("other", [Message.user("keep")])
    assert [m.text for m in await store.history("c")] == ["m2", "m3", "m4", "m5", "m6"]
    assert [m.text for m in await store.history("c", 2)] == ["m5", "m6"]
    assert len(await store.history("c", 100)) == 5, "never more than history_limit"
    assert await store.history("c", 0) == [] and await store.history("nobody") == []
    await store.clear_history("c")
    assert await store.history("c") == []
    await store.append("c", [Message.user("after"), Message.assistant("reply")])
    assert [m.text for m in await store.history("c")] == ["after", "reply"]
    assert [m.text for m in await store.history("other")] == ["keep"]


async def test_the_chat_state_follows_commits(make: Callable[..., Any]) -> None:
    store: ChatStore = await make()
    state = await store.chat_state("c")
    assert list(state.messages) == [] and state.last_id == 0
    await store.append("c", [Message.user("a")])
    assert await store.accept("e1", "c", Message.assistant("b"))
    assert [m.text for m in state.messages] == ["a", "b"], "the same state, kept up to date"
    assert state.last_id == state.ids[-1] and state.ids[0] < state.ids[1]
    await store.clear_history("c")
    assert list(state.messages) == []


async def test_settings_are_json_and_the_view_follows(make: Callable[..., Any]) -> None:
    store: ChatStore = await make()
    assert await store.chat_settings("tg:1") == {}
    view = await store.settings_view("tg:1")
    await store.set_chat_setting("tg:1", "strategy", "rule")
    await store.set_chat_setting("tg:1", "grants", ("clock", "search"))
    await store.set_chat_setting("tg:2", "strategy", "hybrid")
    assert view == {"strategy": "rule", "grants": ["clock", "search"]}, "the view changes when a setting commits"
    settings = await store.chat_settings("tg:1")
    settings["strategy"] = "mutated by the caller"
    assert (await store.chat_settings("tg:1"))["strategy"] == "rule", "a copy"
    await store.set_chat_setting("tg:1", "grants", None)
    await store.set_chat_setting("tg:1", "never-set", None)
    assert await store.chat_settings("tg:1") == {"strategy": "rule"}
    assert await store.chat_settings("tg:2") == {"strategy": "hybrid"}


async def test_committed_settings_are_announced(make: Callable[..., Any]) -> None:
    store = await make()
    told: list[str] = []
    partitioned: PartitionedStore = store
    partitioned.settings.published = told.append
    await store.set_chat_setting("tg:1", "strategy", "rule")
    partitioned.settings.changed("tg:1")
    partitioned.settings.changed(None)
    assert told == ["tg:1"]
    assert await store.chat_settings("tg:1") == {"strategy": "rule"}, "reloaded after a change elsewhere"


async def test_a_fenced_write_needs_the_current_token(make: Callable[..., Any]) -> None:
    store = await make()
    partitioned: PartitionedStore = store
    first = await partitioned.raise_fence(3, "w1")
    second = await partitioned.raise_fence(3, "w2")
    assert second == first + 1
    with fenced(Fence(3, second)):
        assert await store.accept("e1", "c", Message.user("mine"))
    with fenced(Fence(3, first)), pytest.raises(LeaseLost):
        await store.accept("e2", "c", Message.user("stale"))
    await partitioned.flush()
    assert [m.text for m in await store.history("c")] == ["mine"]
    assert await store.event_status("e2") is None


async def test_forgotten_chats_are_read_again(make: Callable[..., Any]) -> None:
    store = await make()
    await store.append("a", [Message.user("x")])
    await store.append("b", [Message.user("y")])
    kept, dropped = await store.chat_state("a"), await store.chat_state("b")
    store.forget_chats(lambda chat: chat == "b")
    assert await store.chat_state("a") is kept
    again = await store.chat_state("b")
    assert again is not dropped and [m.text for m in again.messages] == ["y"]
