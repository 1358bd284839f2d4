"""Redis commands of many callers in one pipeline: each caller gets its own replies, in the order pushed, and a
command Redis refuses fails only its own caller.  The remote channel's answers come back over one reply stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.events import ChatKey, OutboundMessage
from bot.gateway.scaled import connect_redis
from bot.scale.batched import Batched
from bot.scale.relay import REPLIES_TTL_MS, OutboundRelay, RemoteChannel
from tests.fakes.servers import RedisServer


@pytest.fixture
async def client(redis: RedisServer) -> AsyncIterator[Any]:
    redis.flush()
    connection = connect_redis(redis.url())
    yield connection
    await connection.aclose()


def incr(pipe: Any, item: tuple[str, str]) -> None:
    key, by = item
    pipe.rpush("order", f"{key}+{by}")
    pipe.incrby(key, by)


async def test_each_caller_gets_its_own_replies_in_order(client: Any) -> None:
    batched: Batched[tuple[str, str]] = Batched(client, incr, "increments")
    await client.set("text", "not a number")
    calls = [("a", "1"), ("b", "5"), ("text", "1"), ("a", "2")]
    outcomes = await asyncio.gather(*(batched.call(c) for c in calls), return_exceptions=True)
    assert outcomes[0] == [1, 1] and outcomes[1] == [2, 5] and outcomes[3] == [4, 3]
    assert isinstance(outcomes[2], Exception)  # refused by Redis: only this caller hears of it
    assert [v.decode() for v in await client.lrange("order", 0, -1)] == ["a+1", "b+5", "text+1", "a+2"]


async def test_pushed_items_go_without_a_caller(client: Any) -> None:
    batched: Batched[tuple[str, str]] = Batched(client, incr, "increments")
    for n in range(5):
        batched.push(("n", str(n)))
    await batched.flushed()
    assert await client.get("n") == b"10"


async def test_commands_for_a_whole_pipeline_follow_its_items(client: Any) -> None:
    """``finish`` adds commands once per pipeline, after every item's: the callers' replies are their own still."""
    seen: list[list[tuple[str, str]]] = []

    def total(pipe: Any, items: list[tuple[str, str]]) -> None:
        seen.append(items)
        pipe.rpush("order", f"end of {len(items)}")

    batched: Batched[tuple[str, str]] = Batched(client, incr, "increments", total)
    outcomes = await asyncio.gather(*(batched.call((k, "1")) for k in ("a", "b", "a")))
    assert outcomes == [[1, 1], [2, 1], [3, 2]]
    assert seen == [[("a", "1"), ("b", "1"), ("a", "1")]]
    assert [v.decode() for v in await client.lrange("order", 0, -1)] == ["a+1", "b+1", "a+1", "end of 3"]


class Echo:
    """The gateway's delivery: the platform reference of a message is its text."""

    async def send(self, message: OutboundMessage) -> str | None:
        return "ref:" + message.text


async def test_answers_of_many_chats_reach_their_senders(client: Any) -> None:
    relay = OutboundRelay(client, Echo(), None, ["console"], name="gw")
    await relay.start()
    channel = RemoteChannel("console", client)
    try:
        messages = [
            OutboundMessage(chat=ChatKey(channel="console", chat_id=str(n % 7)), text=str(n)) for n in range(50)
        ]
        refs = await asyncio.gather(*(channel.send(m) for m in messages))
        assert refs == [f"ref:{n}" for n in range(50)]
        assert await channel.send(OutboundMessage(chat=ChatKey(channel="console", chat_id="x"), text="again")) == (
            "ref:again"
        )
        # The reply stream goes by itself once nobody answers on it any more (its worker gone).
        assert 0 < await client.pttl(channel.replies) <= REPLIES_TTL_MS
    finally:
        await relay.stop()
