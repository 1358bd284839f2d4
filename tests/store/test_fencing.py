"""Fencing tokens in the store (SQLite and PostgreSQL): a write done for a partition under an old token is
refused in its own transaction, and only that write; unfenced writes never look at tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.fencing import Fence, LeaseLost, fenced
from bot.store.sql.ops import UPSERT_SETTING, Step, utcnow


def setting(key: str, value: str) -> Step:
    return Step(UPSERT_SETTING, (key, "note", f'"{value}"', utcnow()))


async def notes(store: Any) -> dict[str, str]:
    rows = await store.read("SELECT settings_key, value FROM chat_settings WHERE name = 'note'")
    return {key: value.strip('"') for key, value in rows}


async def test_a_write_under_an_old_token_is_refused_and_changes_nothing(make_store: Any) -> None:
    store = await make_store()
    first = await store.raise_fence(3, "worker-a")
    with fenced(Fence(3, first)):
        await store.write([setting("console:a", "by a")])
    second = await store.raise_fence(3, "worker-b")
    assert second > first
    with fenced(Fence(3, first)), pytest.raises(LeaseLost):
        await store.write([setting("console:a", "by a, late")])
    with fenced(Fence(3, second)):
        await store.write([setting("console:b", "by b")])
    await store.write([setting("console:c", "unfenced")])
    assert await notes(store) == {"console:a": "by a", "console:b": "by b", "console:c": "unfenced"}


async def test_other_partitions_tokens_are_their_own(make_store: Any) -> None:
    store = await make_store()
    one, two = await store.raise_fence(1, "w"), await store.raise_fence(2, "w")
    await store.raise_fence(1, "other")
    with fenced(Fence(2, two)):
        await store.write([setting("console:two", "ok")])
    with fenced(Fence(1, one)), pytest.raises(LeaseLost):
        await store.write([setting("console:one", "refused")])
    assert await notes(store) == {"console:two": "ok"}


async def test_in_one_batch_only_the_stale_write_is_refused(make_store: Any) -> None:
    """Writes of many chats share a group commit: a refused one stops itself, not its batch."""
    store = await make_store()
    old = await store.raise_fence(5, "a")
    new = await store.raise_fence(5, "b")
    fresh = await store.raise_fence(6, "b")

    async def write(partition: int, token: int, key: str) -> str:
        with fenced(Fence(partition, token)):
            try:
                await store.write([setting(key, key)])
            except LeaseLost:
                return "refused"
        return "written"

    outcomes = await asyncio.gather(
        write(5, old, "console:stale"),
        write(5, new, "console:current"),
        write(6, fresh, "console:other"),
        write(5, old, "console:stale-2"),
        write(6, fresh, "console:other-2"),
    )
    assert outcomes == ["refused", "written", "written", "refused", "written"]
    assert set(await notes(store)) == {"console:current", "console:other", "console:other-2"}


async def test_a_lease_known_lost_refuses_before_the_database_is_asked(make_store: Any) -> None:
    store = await make_store()
    token = await store.raise_fence(7, "a")
    before = store.stats()["writes"]
    with fenced(Fence(7, token, alive=lambda: False)), pytest.raises(LeaseLost):
        await store.write([setting("console:x", "x")])
    assert store.stats()["writes"] == before
