"""A worker whose lease lapsed while it still worked: its commit is refused, its send is skipped, it lets the
partition go unacknowledged, and the event is handled once, by the partition's next owner (real Redis and
PostgreSQL)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from bot.clock import SYSTEM_CLOCK, FakeClock
from bot.delivery import Delivery
from bot.events import ChatKey, InboundEvent, InboundMessage, OutboundMessage, Sender, event_key
from bot.scale.consumer import PartitionConsumer
from bot.scale.streams import GROUP, RedisBus, inbound_stream, partition_of
from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer, RedisServer
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(120)


class Sink:
    name = "console"

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(self, message: OutboundMessage) -> str | None:
        self.sent.append(message.text)
        return None


@pytest.fixture
async def store(postgres: PostgresServer) -> AsyncIterator[SqlStore]:
    opened = SqlStore(postgres.url(postgres.create_database()), shared=True)
    await opened.start()
    yield opened
    await opened.close()


@pytest.mark.parametrize("belief", ["knows", "believes"])
async def test_a_stalled_worker_cannot_commit_or_send_after_its_partition_moved(
    redis: RedisServer, store: SqlStore, belief: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``knows``: the frozen worker's own clock says its lease ran out, so it stops before asking the database;
    ``believes``: its clock stood still (it thinks the lease is fine), so the database refuses its commit."""
    caplog.set_level(logging.INFO, logger="bot.scale.consumer")  # whatever another test did to the root logger
    redis.flush()
    bus = RedisBus(aioredis.Redis.from_url(redis.url()), partitions=8, maxlen=1000)
    handled: list[tuple[str, str]] = []
    sink = Sink()
    delivery = Delivery()
    delivery.register(sink)
    unfreeze = asyncio.Event()

    def handler(name: str, stall: bool) -> Any:
        async def handle(event: InboundEvent) -> None:
            if stall:
                await unfreeze.wait()
            if await store.accept(event_key(event), str(event.chat), None):
                handled.append((name, event.id))
                await delivery.send(OutboundMessage(chat=event.chat, text=f"{name} answers {event.id}"))

        return handle

    def worker(name: str, stall: bool = False, clock: Any = SYSTEM_CLOCK) -> PartitionConsumer:
        return PartitionConsumer(
            aioredis.Redis.from_url(redis.url()),
            name=name,
            partitions=8,
            lease_ms=600,
            handler=handler(name, stall),
            raise_fence=store.raise_fence,
            clock=clock,
        )

    # Believing: a clock that stands still, so the lease seems held and upkeep never runs.
    frozen = worker("frozen", stall=True, clock=FakeClock() if belief == "believes" else SYSTEM_CLOCK)
    await frozen.start()
    event = InboundMessage(id="m1", chat=ChatKey(channel="console", chat_id="q"), sender=Sender(id="u"), text="hi")
    partition = partition_of(str(event.chat), 8)
    await bus.publish(event)
    await eventually(lambda: frozen.active_chats == 1, what="the frozen worker to be handling the event")
    if belief == "knows":
        for task in frozen._tasks[1:]:  # the process freezes: no lease renewals, no balancing (its handler waits)
            task.cancel()

    heir = worker("heir")
    await heir.start()
    await eventually(lambda: partition in heir.owned, what="the partition to move after the lease lapsed")
    await eventually(lambda: handled == [("heir", "m1")], what="the next owner to claim and handle the event")

    unfreeze.set()  # the frozen worker wakes up and carries on where it stopped
    await eventually(lambda: partition not in frozen.held, what="the frozen worker to let the partition go")
    assert handled == [("heir", "m1")], "its commit was refused: handled once"
    why = "the write was refused" if belief == "believes" else "the lease was lost; the write is not done"
    assert any(why in r.getMessage() and r.name == "bot.scale.consumer" for r in caplog.records), why
    assert sink.sent == ["heir answers m1"], "and it sent nothing"
    # The heir's acknowledgement goes in its next pipeline (batched), so it may land a moment after the handling.
    stream = inbound_stream(partition)

    async def acknowledged() -> bool:
        return (await bus.redis.xpending(stream, GROUP))["pending"] == 0

    await eventually(acknowledged, what="the heir to acknowledge the event (the frozen worker acknowledged nothing)")
    await heir.stop(5)
    await frozen.stop(5)
