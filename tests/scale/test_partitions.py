"""The partition consumer on a real redis-server, leases on fakeredis.

(fakeredis answers blocking stream reads by blocking the event loop, so consumers sharing one fake server
in one process deadlock; the real server costs a few milliseconds to start.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import fakeredis
import pytest
import redis.asyncio as aioredis

from bot.events import InboundEvent
from bot.scale.consumer import PartitionConsumer
from bot.scale.leases import Leases
from bot.scale.streams import GROUP, QUEUED, RedisBus, encode, inbound_stream, partition_lease, partition_of
from tests.fakes.servers import RedisServer, redis_server
from tests.helpers.partitions import message
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(120)

LONG_LEASE_MS = 10_000
"""Where a lapse is not what a test is about: a loaded machine's pauses stay well inside it."""


class Recorder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[tuple[str, str]] = []
        self.taken: list[set[int]] = []
        self.recover: dict[str, Callable[[], Awaitable[None]]] = {}
        """Per chat key: what a take hands back to run first in that chat's lane."""

    async def handle(self, event: InboundEvent) -> None:
        await asyncio.sleep(0.001)
        self.seen.append((event.chat.chat_id, event.text))  # type: ignore[union-attr]

    async def take(self, partitions: set[int]) -> Mapping[str, Callable[[], Awaitable[None]]]:
        self.taken.append(set(partitions))
        return {chat: work for chat, work in self.recover.items() if partition_of(chat, 8) in partitions}


async def until(predicate: Callable[[], bool]) -> None:
    await eventually(predicate, every=0.02)


@pytest.fixture
def redis_url(redis: RedisServer) -> str:
    redis.flush()
    return redis.url()


def client(url: str) -> Any:
    return aioredis.Redis.from_url(url)


def consumer(redis: Any, recorder: Recorder, **options: Any) -> PartitionConsumer:
    return PartitionConsumer(
        redis,
        name=recorder.name,
        partitions=8,
        handler=recorder.handle,
        on_acquire=recorder.take,
        **{"lease_ms": 600, **options},
    )


def test_partition_of_is_stable_across_processes() -> None:
    # zlib.crc32, not hash(): the same chat lands in the same partition in every process (str hashes are salted).
    code = "from bot.scale.streams import partition_of; print([partition_of(f'telegram:{n}', 64) for n in range(50)])"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True
        ).stdout
        for seed in ("1", "2")
    }
    assert runs == {str([partition_of(f"telegram:{n}", 64) for n in range(50)]) + "\n"}
    assert len(set(eval(runs.pop()))) > 30, "and chats spread over the partitions"


async def test_leases_are_held_by_one_owner() -> None:
    redis = fakeredis.FakeAsyncRedis()
    a, b = Leases(redis, "a", 300), Leases(redis, "b", 300)
    assert await a.acquire("k") and not await b.acquire("k")
    assert await b.renew(["k"]) == [False] and not await b.release("k"), "b can neither extend nor drop a's lease"
    await eventually(lambda: b.acquire("k"), what="a lease not renewed to lapse")
    assert not await a.release("k"), "a's late release does not drop b's"


async def test_two_workers_share_the_partitions_and_keep_each_chat_in_order(redis_url: str) -> None:
    redis = client(redis_url)
    bus = RedisBus(redis, partitions=8, maxlen=10_000)
    one, two = Recorder("one"), Recorder("two")
    # A lease long enough that a loaded machine's pauses do not let one lapse: this is about the orderly
    # hand-over (a lapsed lease may hand an entry to two workers; the inbox guard makes that one handling).
    first = consumer(client(redis_url), one, lease_ms=LONG_LEASE_MS)
    await first.start()
    assert first.owned == set(range(8)), "alone, a worker holds every partition"
    second = consumer(client(redis_url), two, lease_ms=LONG_LEASE_MS)
    await second.start()
    for n in range(20):
        for chat in ("a", "b", "c", "d", "e", "f"):
            await bus.publish(message(chat, n))
    await until(lambda: len(one.seen) + len(two.seen) >= 120)
    await until(lambda: len(first.owned) + len(second.owned) == 8 and bool(first.owned and second.owned))
    assert not first.owned & second.owned, "a partition has one owner"
    for chat in ("a", "b", "c", "d", "e", "f"):
        texts = [t for c, t in one.seen + two.seen if c == chat]
        assert sorted(texts, key=lambda t: int(t[1:])) == [f"m{n}" for n in range(20)], "each message once"
        for recorder in (one, two):
            mine = [int(t[1:]) for c, t in recorder.seen if c == chat]
            assert mine == sorted(mine), "in order"
    assert not await redis.hgetall(QUEUED), "every handled event left the chat's count"
    await first.stop(2)
    await second.stop(2)
    assert not await redis.exists(*[partition_lease(p) for p in range(8)]), "stopping releases the leases"


async def test_a_dead_workers_entries_are_claimed_by_the_next_owner(redis_url: str) -> None:
    redis = client(redis_url)
    bus = RedisBus(redis, partitions=8, maxlen=10_000)
    release = asyncio.Event()
    stuck = Recorder("stuck")

    async def never(event: InboundEvent) -> None:
        await release.wait()

    dead = PartitionConsumer(client(redis_url), name="dead", partitions=8, lease_ms=600, handler=never)
    await dead.start()
    for n in range(5):
        await bus.publish(message("z", n))
    await until(lambda: dead.active_chats > 0)
    for task in dead._tasks:  # it "dies": no reads, no renewals, no acknowledgements
        task.cancel()
    alive = Recorder("alive")
    heir = consumer(client(redis_url), alive)
    await heir.start()
    await until(lambda: len(alive.seen) >= 5)
    assert alive.seen == [("z", f"m{n}") for n in range(5)], "claimed in order after the lease lapsed"
    assert alive.taken and partition_of("console:z", 8) in set().union(*alive.taken)
    assert stuck.seen == []
    release.set()
    await heir.stop(2)


async def test_recovery_runs_first_in_its_chat_and_beside_the_others(redis_url: str) -> None:
    """What a dead worker left unfinished in a chat is finished before that chat's next message, while the other
    chats of the partitions taken are answered meanwhile (recovery beside reading, not before it)."""
    redis = client(redis_url)
    bus = RedisBus(redis, partitions=8, maxlen=10_000)
    dead = PartitionConsumer(client(redis_url), name="dead", partitions=8, lease_ms=600, handler=Recorder("x").handle)
    await dead.start()
    for task in dead._tasks:  # it "dies" holding every partition
        task.cancel()
    # Two chats of one partition: "slow" has a cut-off run to finish, "quick" does not.
    quick = next(f"q{n}" for n in range(100) if partition_of(f"console:q{n}", 8) == partition_of("console:slow", 8))
    await bus.publish(message("slow", 1))
    await bus.publish(message(quick, 1))
    alive = Recorder("alive")
    finish = asyncio.Event()

    async def recover_slow() -> None:
        await finish.wait()
        alive.seen.append(("slow", "recovered"))

    alive.recover["console:slow"] = recover_slow
    heir = consumer(client(redis_url), alive)
    await heir.start()
    await until(lambda: (quick, "m1") in alive.seen)
    assert ("slow", "m1") not in alive.seen, "the chat's own message waits for its recovery"
    finish.set()
    await until(lambda: ("slow", "m1") in alive.seen)
    assert [s for s in alive.seen if s[0] == "slow"] == [("slow", "recovered"), ("slow", "m1")]
    await heir.stop(2)


async def test_an_entry_read_by_a_worker_that_lost_its_lease_is_rescued(redis_url: str) -> None:
    """A worker that stalled past its lease may still read one of the partition's entries after the hand-over;
    the owner takes it over once it has been pending there longer than a lease."""
    redis = client(redis_url)
    alive = Recorder("owner")
    owner = consumer(client(redis_url), alive)
    await owner.start()
    event = message("y", 0)
    stream = inbound_stream(partition_of("console:y", 8))
    async with redis.pipeline(transaction=True) as pipe:  # added and read by the "zombie" at once
        pipe.xadd(stream, encode(event))
        pipe.xreadgroup(GROUP, "zombie", {stream: ">"}, count=10)
        await pipe.execute()
    await until(lambda: alive.seen == [("y", "m0")])
    assert owner.claimed == 1

    async def acknowledged() -> bool:  # the handler has seen it; the acknowledgement follows it
        return not (await redis.xpending(stream, GROUP))["pending"]

    await eventually(acknowledged)
    await owner.stop(2)


async def test_a_worker_that_cannot_renew_its_leases_says_so_in_readyz_and_metrics() -> None:
    from prometheus_client import generate_latest

    from bot.clock import FakeClock
    from bot.gateway.ops import OpsEndpoints
    from bot.ops.metrics import Metrics, Sample

    servers = redis_server()
    own = next(servers)  # a server of its own: this test stops it
    clock = FakeClock()
    worker = consumer(client(own.url()), Recorder("w"), lease_ms=3000, clock=clock)
    await worker.start()
    ops = OpsEndpoints(
        None,  # type: ignore[arg-type]  # only the readiness checks are used
        Metrics(),
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        started=lambda: True,
        leases=worker.lease_state,
        lease_problem=worker.lease_problem,
    )
    await clock.advance(1.0)
    assert worker.lease_problem() is None and worker.lease_state().held == 8
    own.process.kill()  # type: ignore[union-attr]  # Redis gone: renewals fail from now on
    own.process.wait()  # type: ignore[union-attr]
    for _ in range(4):
        await clock.advance(1.0)
        await clock.settle()
    problem = worker.lease_problem()
    assert problem is not None and "last renewed" in problem
    assert any("last renewed" in p for p in await ops.problems())
    metrics = Metrics()
    metrics.apply(Sample(leases=worker.lease_state()))
    text = generate_latest(metrics.registry).decode()
    assert "bot_bus_partitions_held 8.0" in text
    age = next(line for line in text.splitlines() if line.startswith("bot_bus_lease_renewal_age_seconds "))
    assert float(age.split()[1]) > 3.0
    for task in worker._tasks:
        task.cancel()
    servers.close()
