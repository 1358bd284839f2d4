"""The write-through cache's race rules, deterministically."""

from __future__ import annotations

import asyncio

import pytest

from agents.messages import Message
from bot.store.sql.cache import CachedMap, ChatState, Lru

pytestmark = pytest.mark.timeout(10)


def _state(*texts: str) -> ChatState:
    return ChatState.loaded([(i + 1, Message.user(t)) for i, t in enumerate(texts)], limit=3)


async def test_a_commit_during_a_load_makes_it_load_again() -> None:
    database = ["a"]
    loads = 0
    gate, started = asyncio.Event(), asyncio.Event()

    async def load(_key: str) -> ChatState:
        nonlocal loads
        loads += 1
        snapshot = list(database)
        started.set()
        await gate.wait()
        return _state(*snapshot)

    cache: CachedMap[ChatState] = CachedMap(10, load)
    getter = asyncio.ensure_future(cache.get("c"))
    await started.wait()
    database.append("b")  # committed after the load's snapshot...
    cache.committed("c", lambda s: s.add(2, Message.user("b")))  # ...and reported before it finished
    gate.set()
    state = await getter
    assert [m.text for m in state.messages] == ["a", "b"] and loads == 2


async def test_a_commit_reported_after_the_load_is_applied_once() -> None:
    async def load(_key: str) -> ChatState:
        return _state("a", "b")  # the snapshot already holds row 2

    cache: CachedMap[ChatState] = CachedMap(10, load)
    await cache.get("c")
    cache.committed("c", lambda s: s.add(2, Message.user("b")))
    cache.committed("c", lambda s: s.add(3, Message.user("c")))
    state = await cache.get("c")
    assert [m.text for m in state.messages] == ["a", "b", "c"]


async def test_concurrent_misses_share_one_load() -> None:
    loads = 0

    async def load(key: str) -> dict[str, int]:
        nonlocal loads
        loads += 1
        await asyncio.sleep(0.01)
        return {"n": 1}

    cache: CachedMap[dict[str, int]] = CachedMap(10, load)
    results = await asyncio.gather(*(cache.get("k") for _ in range(5)))
    assert loads == 1 and all(r == {"n": 1} for r in results)


def test_chat_state_keeps_the_newest_rows_and_restarts_ids_after_clear() -> None:
    state = _state("a", "b", "c")
    state.add(4, Message.user("d"))
    assert [m.text for m in state.newest(10)] == ["b", "c", "d"]
    assert [m.text for m in state.newest(1)] == ["d"]
    state.clear()
    state.add(2, Message.user("reused id"))  # SQLite may hand out a deleted row's id again
    assert [m.text for m in state.newest(10)] == ["reused id"]


def test_lru_forgets_the_least_recently_used() -> None:
    lru: Lru[int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1
    lru.put("c", 3)
    assert "b" not in lru and lru.peek("a") == 1 and len(lru) == 2


def test_window_cuts_like_fit_context_including_after_eviction() -> None:
    import random

    from agents.messages import Message, fit_context
    from bot.store.sql.cache import ChatState

    rng = random.Random(7)
    state = ChatState.loaded([], limit=30)
    kept: list[tuple[int, Message]] = []
    for row_id in range(1, 120):
        role = rng.choice(["user", "assistant", "assistant"])
        text = "x" * rng.randint(1, 400)
        message = Message.user(text) if role == "user" else Message.assistant(text)
        state.add(row_id, message)
        kept = [*kept, (row_id, message)][-30:]
        assert state.total == sum(m.size() for _, m in kept)
        for budget in (0, 50, 500, 2000, 10**6):
            for before in (row_id + 1, row_id, max(1, row_id - 3), kept[0][0]):
                expected = fit_context([m for i, m in kept if i < before], budget)
                assert state.window(before, budget) == expected, (row_id, budget, before)
    state.clear()
    assert state.total == 0 and state.window(10**9, 100) == []


def test_the_summarised_turns_are_counted_as_they_come_and_go() -> None:
    """``covered`` (what the summary covers, counted as messages arrive and leave the bounded history) gives the
    same window as walking the ids, before and after evictions and a newer summary."""
    import random

    from agents.messages import Message, fit_context

    rng = random.Random(11)
    state = ChatState.loaded([], limit=25)
    kept: list[tuple[int, Message]] = []
    upto = 0
    for row_id in range(1, 150):
        text = "y" * rng.randint(1, 300)
        message = Message.user(text) if row_id % 2 else Message.assistant(text)
        state.add(row_id, message)
        kept = [*kept, (row_id, message)][-25:]
        if row_id % 17 == 0:  # a fold: the summary now covers the older part of what is kept
            upto = kept[len(kept) // 2][0]
            state.summarised(f"summary up to {upto}", upto)
        covered = [(i, m) for i, m in kept if i <= upto]
        assert (state.covered, state.covered_size) == (len(covered), sum(m.size() for _, m in covered))
        for budget in (0, 300, 3000, 10**6):
            for before in (row_id + 1, row_id):
                expected = fit_context([m for i, m in kept if upto < i < before], budget)
                assert state.window(before, budget, upto) == expected, (row_id, budget, before)
    state.clear()
    assert (state.covered, state.covered_size, state.summary) == (0, 0, None)
