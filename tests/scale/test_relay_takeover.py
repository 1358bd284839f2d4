"""A gateway that dies with outbound entries read and not acknowledged: the next gateway takes them over at once and
answers their waiting workers; what was sent and marked is not sent again; a typing indicator is not; a chat's next
entry starts only once the previous one is acknowledged (so at most one per chat is ever in doubt); a relay whose
liveness lapsed reads under a new name (real Redis; the outbox in memory: :class:`~tests.fakes.run_repos.FakeRuns`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.clock import FakeClock
from bot.events import ChatKey, OutboundMessage
from bot.gateway.scaled import connect_redis
from bot.scale.liveness import Liveness, alive_key
from bot.scale.relay import GATEWAYS, OutboundRelay, RemoteChannel, outbound_stream
from bot.scale.streams import ensure_group
from bot.store.rows import InterruptRow, RunRow
from tests.fakes.run_repos import FakeRuns
from tests.fakes.servers import RedisServer
from tests.waiting import CEILING_S, eventually

pytestmark = pytest.mark.timeout(120)

STREAM = outbound_stream("console")


def chat(n: int) -> ChatKey:
    return ChatKey(channel="console", chat_id=str(n))


class Platform:
    """The gateway's delivery, at the network seam: what reached the platform, in order; the reference is the text.
    ``before_send`` runs first (a test looks at Redis at that moment)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.before_send: Any = None

    async def send(self, message: OutboundMessage) -> str | None:
        if self.before_send is not None:
            await self.before_send(message)
        if message.kind == "typing":
            self.sent.append("typing")
            return None
        self.sent.append(message.text)
        return "ref:" + message.text


@pytest.fixture
async def client(redis: RedisServer) -> AsyncIterator[Any]:
    redis.flush()
    connection = connect_redis(redis.url())
    yield connection
    await connection.aclose()


@pytest.fixture
def runs() -> FakeRuns:
    return FakeRuns()


async def read_as_dead_gateway(client: Any, count: int) -> None:
    """What a gateway did before its SIGKILL: it read ``count`` entries (and sent none of them, or some)."""
    got = 0
    async with asyncio.timeout(CEILING_S):
        while got < count:
            replies = await client.xreadgroup(GATEWAYS, "gateway-dead.1", {STREAM: ">"}, count=count, block=100)
            got += sum(len(entries) for _, entries in replies or [])


async def test_a_dead_gateways_entries_are_taken_over_at_once_and_its_waiters_answered(
    client: Any, runs: FakeRuns
) -> None:
    """Before: a dead gateway's entries waited 30 s for a stale claim, and every waiting worker timed out first."""
    await ensure_group(client, STREAM, GATEWAYS)
    worker = RemoteChannel("console", client, timeout_s=CEILING_S / 2)  # what the test would see time out
    # A prompt the dead gateway had sent and marked sent (its reference is on the interrupt) ...
    run = RunRow("r1", str(chat(3)), "react", "running", "corr", "u1")
    interrupt = InterruptRow("i1", str(chat(3)), "r1", "tool_confirm", "Run it?", {}, [["Approve", "y"]], "n", "u1")
    prompt = OutboundMessage(chat=chat(3), text="Run it?")
    marked = await runs.pause(run, {"v": 1}, interrupt, prompt.model_dump_json())
    await runs.sent(marked, "ref:the first Run it?", "i1", wait=True)
    # ... a reply it had read and not sent, a committed one likewise, and a typing indicator long stale.
    reply = OutboundMessage(chat=chat(2), text="committed")
    unsent = runs.enqueue(str(chat(2)), reply.model_dump_json())
    await worker.send(OutboundMessage(chat=chat(1), text="", kind="typing"))
    asks = [
        asyncio.ensure_future(worker.send(OutboundMessage(chat=chat(1), text="plain"))),
        asyncio.ensure_future(worker.deliver(unsent, reply, None)),
        asyncio.ensure_future(worker.deliver(marked, prompt, "i1")),
    ]
    await read_as_dead_gateway(client, 4)
    platform = Platform()
    relay = OutboundRelay(client, platform, runs, ["console"], name="gateway-next", alive_ttl_ms=300)
    await relay.start()
    try:
        async with asyncio.timeout(CEILING_S):
            answers = await asyncio.gather(*asks)
        assert answers == ["ref:plain", "ref:committed", "ref:the first Run it?"]
        assert sorted(platform.sent) == ["committed", "plain"], "the marked prompt and the stale indicator not sent"
        assert await runs.is_unsent(unsent) is False
        assert relay.taken_over == 4
        await eventually(lambda: pending(client), what="every entry acknowledged")
    finally:
        await relay.stop()


async def pending(client: Any) -> bool:
    return int((await client.xpending(STREAM, GATEWAYS))["pending"]) == 0


async def test_a_chats_next_entry_goes_only_once_the_previous_is_acknowledged(client: Any, runs: FakeRuns) -> None:
    """So a gateway killed at any moment leaves at most one entry per chat that may have been sent."""
    platform = Platform()
    unacknowledged: list[tuple[str, int]] = []

    async def look(message: OutboundMessage) -> None:
        summary = await client.xpending(STREAM, GATEWAYS)
        unacknowledged.append((message.text, int(summary["pending"])))

    platform.before_send = look
    relay = OutboundRelay(client, platform, runs, ["console"], name="gateway-a")
    await relay.start()
    worker = RemoteChannel("console", client)
    try:
        # Many entries of one chat at once (two workers during a partition move, or urgent notices): all read in
        # one go, sent one at a time.
        texts = [f"m{n}" for n in range(6)]
        async with asyncio.timeout(CEILING_S):
            await asyncio.gather(*(worker.send(OutboundMessage(chat=chat(1), text=t)) for t in texts))
        assert sorted(platform.sent) == texts
        # When an entry goes to the platform, the ones before it are acknowledged: pending are it and those after.
        for position, (text, count) in enumerate(sorted(unacknowledged, key=lambda u: platform.sent.index(u[0]))):
            assert count <= len(texts) - position, (text, unacknowledged)
    finally:
        await relay.stop()


async def test_a_relay_past_its_liveness_reads_under_a_new_name_and_the_old_ones_entries_are_taken_over(
    client: Any,
) -> None:
    clock = FakeClock()
    alive = Liveness(client, "gateway-stalled", ttl_ms=300, clock=clock)
    await alive.announce()
    first = alive.consumer
    assert alive.alive(first) and await client.get(alive_key(first)) == first.encode()
    await clock.advance(0.3)  # its clock says the key may have lapsed: nothing read under that name goes out
    assert not alive.alive(first)
    await alive.renew()
    assert alive.consumer != first and alive.alive(alive.consumer)
    assert await client.get(alive_key(first)) is None, "the old name is dead at once"
    # What the old name read (and never sent) is a dead consumer's once it is idle for a TTL.
    await ensure_group(client, STREAM, GATEWAYS)
    await client.xadd(STREAM, {"chat": "console:1", "message": "{}"})
    await client.xreadgroup(GATEWAYS, first, {STREAM: ">"}, count=1)
    assert await eventually(lambda: alive.dead(STREAM, GATEWAYS), every=0.05) == [first]
    await alive.stop()


async def test_a_live_gateways_slow_entry_stays_its_own(client: Any, runs: FakeRuns) -> None:
    """Pending long (its platform made it wait) but its gateway alive: not taken, so not sent twice; once that
    gateway is dead, taken over."""
    await ensure_group(client, STREAM, GATEWAYS)
    slow = "gateway-slow.1"
    await client.set(alive_key(slow), slow, px=60_000)
    worker = RemoteChannel("console", client, timeout_s=CEILING_S)
    waiting = asyncio.ensure_future(worker.send(OutboundMessage(chat=chat(1), text="held by a flood control")))
    async with asyncio.timeout(CEILING_S):
        while not (await client.xreadgroup(GATEWAYS, slow, {STREAM: ">"}, count=1, block=100)):
            pass
    await eventually(lambda: idle_at_least(client, 200), every=0.05, what="the entry pending 200 ms")
    platform = Platform()
    relay = OutboundRelay(client, platform, runs, ["console"], name="gateway-b", claim_idle_ms=200, alive_ttl_ms=300)
    await relay.start()  # its first round claims what is stale, then reads
    try:
        assert await worker.send(OutboundMessage(chat=chat(2), text="new")) == "ref:new"
        assert platform.sent == ["new"] and not waiting.done()
        await client.delete(alive_key(slow))  # the slow gateway died
        async with asyncio.timeout(CEILING_S):
            assert await waiting == "ref:held by a flood control"
        assert platform.sent == ["new", "held by a flood control"]
    finally:
        await relay.stop()


async def idle_at_least(client: Any, ms: int) -> bool:
    entries = await client.xpending_range(STREAM, GATEWAYS, "-", "+", 10)
    return bool(entries) and all(int(e["time_since_delivered"]) >= ms for e in entries)
