"""Scale-out benchmark: one gateway and 1, 2 and 4 workers on real PostgreSQL and Redis (subprocesses).

For each worker count: a closed loop of ``--chats`` chats, each sending its next message through the
Telegram webhook as soon as its answer arrived, for ``--seconds``: messages per second, and latency
from the webhook request to the answer reaching the (fake) Telegram API, p50 / p99.  Then:

- ``redis_hop_us``: what the Redis bus adds per message over the in-process bus (publish, read by a
  partition consumer, acknowledge; a no-op handler), in one process;
- ``partition_move_s``: after SIGKILL of one of two workers, the time until the survivor holds every
  partition (the lease time, ``--lease-ms``, plus a renewal period at most);
- ``failover``: one gateway and three workers under the closed loop; one worker is SIGKILLed, and for each
  partition it held: seconds from the kill to its new owner's lease and to the first answer in it
  (median and worst), and whether any answer was lost or sent twice;
- ``kill_gateway`` (``--kill-gateway``, alone): one gateway and three workers under the closed loop; the gateway is
  SIGKILLed and a new one started: seconds to its readiness, from readiness to the first answer, per-chat wait from
  the kill to the chat's next answer (p50 / p99 / max), the worst chat beyond readiness, lost and doubled answers
  (``tests/scale/gateway_kill.py``, which ``tests/scale/test_gateway_kill.py`` runs too).

Each throughput run prints ``cpu_ms_per_msg``: the CPU milliseconds per message of every part of the path, the
gateway, each worker, PostgreSQL (the postmaster and its backends), Redis, the fake platform (the fake Telegram
Bot API, on a thread of its own with its own event loop: that thread's CPU) and the bench client (the webhook
posts: the rest of this process), and ``whole_path_ms``: the gateway, the workers, PostgreSQL and Redis (ours,
the bench client and the fake platform apart), and ``with_platform_ms``: with the fake platform too.

On a 2-core machine expect the mechanism, not linear gains: the gateway, the workers, PostgreSQL,
Redis and the fake platform share the cores.  Prints ONE JSON line.

    python bench/scaleout.py [--chats 100] [--seconds 10] [--workers 1,2,4] [--lease-ms 2000]
    python bench/scaleout.py --kill-gateway --chats 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

import redis.asyncio as aioredis

from bench.busy import busy_loops, cpu_seconds, tree_cpu_seconds
from bot.bus import InMemoryBus
from bot.events import ChatKey, InboundEvent, InboundMessage, Sender
from bot.gateway.scaled import connect_redis
from bot.scale.consumer import PartitionConsumer
from bot.scale.streams import RedisBus, partition_lease, partition_of
from tests.fakes.servers import postgres_server, redis_server
from tests.fakes.telegram_server import FakeTelegram
from tests.scale.gateway_kill import kill_gateway_under_load
from tests.scale.harness import Cluster


class TimedTelegram(FakeTelegram):
    """The fake Bot API, noting when each answer arrived."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.arrived: dict[str, float] = {}
        self._waiting: dict[str, asyncio.Future[float]] = {}

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        text, now = str(params.get("text", "")), time.monotonic()
        self.arrived[text] = now
        waiter = self._waiting.pop(text, None)
        if waiter is not None:  # the fake may serve on a thread of its own (FakeThread): wake the waiter's loop
            waiter.get_loop().call_soon_threadsafe(_resolve, waiter, now)
        return await super()._api_sendMessage(params)

    async def answer(self, text: str, timeout: float = 60) -> float:
        """When ``text`` arrived (waiting for it without polling: a hundred polling chats cost a core)."""
        if text in self.arrived:
            return self.arrived[text]
        waiter = self._waiting.setdefault(text, asyncio.get_running_loop().create_future())
        if text in self.arrived:  # it came on the fake's thread between the look and the waiter
            return self.arrived[text]
        async with asyncio.timeout(timeout):
            return await waiter


def _resolve(waiter: asyncio.Future[float], when: float) -> None:
    if not waiter.done():
        waiter.set_result(when)


class FakeThread:
    """A fake platform serving on a thread of its own (its own event loop), so that its CPU is that thread's."""

    def __init__(self, fake: TimedTelegram) -> None:
        self.fake = fake
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-platform", daemon=True)

    async def start(self) -> None:
        self.thread.start()
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop))

    async def stop(self) -> None:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop))
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self.thread.join)
        self.loop.close()

    def cpu_seconds(self) -> float:
        assert self.thread.ident is not None
        return time.clock_gettime(time.pthread_getcpuclockid(self.thread.ident))


async def closed_loop(
    cluster: Cluster, fake: TimedTelegram, chats: int, seconds: float, servers: dict[str, int], platform: FakeThread
) -> dict[str, Any]:
    """``servers``: name → pid of Redis and PostgreSQL (whose CPU is counted with their children's); ``platform``:
    the fake platform's thread (its CPU is taken out of this process's, the rest is the bench client's)."""
    latencies: list[float] = []
    done = 0
    stop = time.monotonic() + seconds

    async def chat(n: int) -> None:
        nonlocal done
        chat_id, i = 50_000 + n, 0
        while time.monotonic() < stop:
            text = f"b{chat_id}-{i}"
            began = time.monotonic()
            await cluster.deliver(
                {"update_id": chat_id * 100_000 + i, **fake.message(text, chat_id=chat_id, user_id=chat_id)}
            )
            latencies.append((await fake.answer("echo: " + text) - began) * 1000)
            done += 1
            i += 1

    pids = {name: proc.pid for name, proc in cluster.procs.items()} | {"bench": os.getpid()}
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    cpu_before |= {name: tree_cpu_seconds(pid) for name, pid in servers.items()}
    cpu_before["fake_platform"] = platform.cpu_seconds()
    began = time.monotonic()
    await asyncio.gather(*(chat(n) for n in range(chats)))
    elapsed = time.monotonic() - began
    used = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
    used |= {name: tree_cpu_seconds(pid) - cpu_before[name] for name, pid in servers.items()}
    used["fake_platform"] = platform.cpu_seconds() - cpu_before["fake_platform"]
    used["bench_client"] = used.pop("bench") - used["fake_platform"]
    per_msg = {name: round(seconds * 1000 / max(done, 1), 3) for name, seconds in used.items()}
    ours = sum(ms for name, ms in per_msg.items() if name not in ("fake_platform", "bench_client"))
    latencies.sort()
    return {
        "msgs_per_s": round(done / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
        "messages": done,
        # Where the two cores go: CPU milliseconds per message of each part of the path.
        "cpu_ms_per_msg": per_msg,
        "whole_path_ms": round(ours, 3),
        "with_platform_ms": round(ours + per_msg["fake_platform"], 3),
    }


async def redis_hop(url: str, n: int = 5000) -> float:
    """Microseconds per message the Redis bus adds over the in-process one."""

    def event(i: int) -> InboundMessage:
        return InboundMessage(
            id=str(i), chat=ChatKey(channel="console", chat_id=str(i % 50)), sender=Sender(id="u", name="u"), text="x"
        )

    events = [event(i) for i in range(n)]
    handled = 0

    async def handler(_event: InboundEvent) -> None:
        nonlocal handled
        handled += 1

    local = InMemoryBus(max_concurrent=64, max_pending=n)
    local.subscribe(handler)
    began = time.monotonic()
    for e in events:
        await local.publish(e)
    await local.join()
    in_memory = (time.monotonic() - began) / n

    redis = connect_redis(url)
    await redis.flushall()
    consumer = PartitionConsumer(redis, name="bench", partitions=8, lease_ms=5000, handler=handler)
    await consumer.start()
    bus = RedisBus(redis, partitions=8, maxlen=100_000)
    handled = 0
    began = time.monotonic()
    for e in events:  # as the gateway does: one publish per request it acknowledges
        await bus.publish(e)
    async with asyncio.timeout(120):
        while handled < n:  # noqa: ASYNC110 - counted by the consumer's handler
            await asyncio.sleep(0.005)
    over_redis = (time.monotonic() - began) / n
    await consumer.stop(5)
    await redis.aclose()
    return round((over_redis - in_memory) * 1e6, 1)


async def partition_move(cluster: Cluster, url: str, partitions: int) -> float:
    await cluster.start("w-a", "worker")
    await cluster.start("w-b", "worker")
    redis = aioredis.Redis.from_url(url)
    keys = [partition_lease(p) for p in range(partitions)]

    async def holders() -> set[bytes]:
        return {h for h in await redis.mget(keys) if h}

    async with asyncio.timeout(60):
        while len(await holders()) < 2 or None in await redis.mget(keys):  # noqa: ASYNC110 - set by the workers
            await asyncio.sleep(0.05)
    victim = cluster.procs["w-a"].pid
    killed = time.monotonic()
    await cluster.kill("w-a")
    async with asyncio.timeout(60):
        while True:
            owners = await redis.mget(keys)
            if all(o and f"-{victim}-".encode() not in o for o in owners):
                break
            await asyncio.sleep(0.01)
    moved = time.monotonic() - killed
    await redis.aclose()
    return round(moved, 2)


async def failover(cluster: Cluster, fake: TimedTelegram, url: str, partitions: int, chats: int) -> dict[str, Any]:
    """Kill one of three workers under load; per partition it held: time to a new lease and to the first answer."""
    await cluster.start("gateway", "gateway")
    await asyncio.gather(*(cluster.start(f"w-{n}", "worker") for n in range(3)))
    redis = aioredis.Redis.from_url(url)
    keys = [partition_lease(p) for p in range(partitions)]
    async with asyncio.timeout(60):
        while len({h for h in await redis.mget(keys) if h}) < 3 or None in await redis.mget(keys):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    answered: dict[str, list[float]] = {}
    sent: dict[str, int] = {}
    stopping = False
    original = fake._api_sendMessage

    async def noting(params: dict[str, Any]) -> Any:
        text = str(params.get("text", ""))
        answered.setdefault(text, []).append(time.monotonic())
        return await original(params)

    fake._api_sendMessage = noting  # type: ignore[method-assign]

    async def chat(n: int) -> None:
        chat_id, i = 70_000 + n, 0
        while not stopping:
            text = f"f{chat_id}-{i}"
            await cluster.deliver(
                {"update_id": chat_id * 100_000 + i, **fake.message(text, chat_id=chat_id, user_id=chat_id)}
            )
            sent[text] = chat_id
            async with asyncio.timeout(120):
                while "echo: " + text not in answered:  # noqa: ASYNC110 - filled by the fake server's handler
                    await asyncio.sleep(0.002)
            i += 1

    loops = [asyncio.create_task(chat(n)) for n in range(chats)]
    await asyncio.sleep(3)
    victim = cluster.procs["w-0"].pid
    owners = await redis.mget(keys)
    orphaned = [p for p, o in enumerate(owners) if o and f"-{victim}-".encode() in o]
    # One probe chat per orphaned partition, quiet until the kill: its message goes in right after it.
    probes: dict[int, int] = {}
    for chat_id in range(90_000, 99_999):
        part = partition_of(f"telegram:{chat_id}", partitions)
        if part in orphaned and part not in probes:
            probes[part] = chat_id
    killed = time.monotonic()
    await cluster.kill("w-0")
    moved: dict[int, float] = {}

    async def probe(part: int, chat_id: int) -> float:
        text = f"probe{chat_id}"
        await cluster.deliver({"update_id": chat_id * 100_000, **fake.message(text, chat_id=chat_id, user_id=chat_id)})
        sent[text] = chat_id
        async with asyncio.timeout(120):
            while "echo: " + text not in answered:  # noqa: ASYNC110 - filled by the fake server's handler
                await asyncio.sleep(0.005)
        return answered["echo: " + text][0] - killed

    probing = asyncio.gather(*(probe(p, c) for p, c in probes.items()))
    async with asyncio.timeout(120):
        while len(moved) < len(orphaned):
            now = time.monotonic()
            for part, owner in enumerate(await redis.mget(keys)):
                if part in orphaned and part not in moved and owner and f"-{victim}-".encode() not in owner:
                    moved[part] = now - killed
            await asyncio.sleep(0.02)
    firsts = sorted(await probing)
    await asyncio.sleep(2)
    stopping = True
    await asyncio.gather(*loops)
    await redis.aclose()
    doubled = sum(1 for times in answered.values() if len(times) > 1)
    lost = sum(1 for text in sent if "echo: " + text not in answered)
    moves = sorted(moved.values())
    return {
        "orphaned_partitions": len(orphaned),
        "lease_move_s": {"median": round(statistics.median(moves), 2), "worst": round(moves[-1], 2)},
        "first_answer_s": {"median": round(statistics.median(firsts), 2), "worst": round(firsts[-1], 2)},
        "messages": len(sent),
        "lost": lost,
        "doubled": doubled,
        "send_it_again": sum(1 for text in answered if "send it again" in text),
    }


async def main(args: argparse.Namespace) -> None:
    with busy_loops(args.busy_loops):
        await measure(args)


async def measure(args: argparse.Namespace) -> None:
    pg_servers, redis_servers = postgres_server(), redis_server()
    pg, rd = next(pg_servers), next(redis_servers)
    results: dict[str, Any] = {
        "cores": os.cpu_count(),
        "chats": args.chats,
        "seconds": args.seconds,
        "max_concurrent_chats": args.max_concurrent_chats,
        "busy_loops": args.busy_loops,
    }
    env = {
        "PARTITIONS": str(args.partitions),
        "LEASE_MS": str(args.lease_ms),
        "MAX_CONCURRENT_CHATS": str(args.max_concurrent_chats),
    }
    server_pids = {"postgres": int((pg.data / "postmaster.pid").read_text().split()[0])}
    if rd.process is not None:
        server_pids["redis"] = rd.process.pid

    async def on_cluster(
        name: str, run: Callable[[Cluster, TimedTelegram], Awaitable[Any]], platform: FakeThread | None = None
    ) -> Any:
        """``platform``: the fake serves on that thread (its CPU measured apart), else on this loop."""
        rd.flush()
        fake = platform.fake if platform is not None else TimedTelegram()
        await (platform.start() if platform is not None else fake.start())
        tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-scaleout-{os.getpid()}-{name}"
        tmp.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(tmp, fake, pg.url(pg.create_database()), rd.url(), **env)
        try:
            return await run(cluster, fake)
        finally:
            await cluster.stop_all()
            await (platform.stop() if platform is not None else fake.stop())

    def throughput(workers: int, platform: FakeThread) -> Callable[[Cluster, TimedTelegram], Awaitable[Any]]:
        async def run(cluster: Cluster, fake: TimedTelegram) -> Any:
            await cluster.start("gateway", "gateway")
            await asyncio.gather(*(cluster.start(f"worker-{n}", "worker") for n in range(workers)))
            await asyncio.sleep(args.lease_ms / 1000)  # let the partitions settle
            return await closed_loop(cluster, fake, args.chats, args.seconds, server_pids, platform)

        return run

    try:
        if args.kill_gateway:
            figures = await on_cluster(
                "kill-gateway", lambda cluster, fake: kill_gateway_under_load(cluster, fake, chats=args.chats)
            )
            results["kill_gateway"] = figures.json()
            results["lease_ms"] = args.lease_ms
        elif not args.only_failover:
            for workers in [int(w) for w in args.workers.split(",")]:
                platform = FakeThread(TimedTelegram())
                results[f"workers_{workers}"] = await on_cluster(str(workers), throughput(workers, platform), platform)
            rd.flush()
            results["redis_hop_us"] = await redis_hop(rd.url())
            results["partition_move_s"] = await on_cluster(
                "move", lambda cluster, _fake: partition_move(cluster, rd.url(), args.partitions)
            )
            results["lease_ms"] = args.lease_ms
        if not args.kill_gateway and (args.failover or args.only_failover):
            results["failover"] = await on_cluster(
                "failover", lambda cluster, fake: failover(cluster, fake, rd.url(), args.partitions, args.chats)
            )
    finally:
        # Closing the generators does not run what follows their ``yield``: each server is stopped here.
        pg.stop()
        rd.stop()
        for servers in (pg_servers, redis_servers):
            servers.close()
    print(json.dumps(results))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--lease-ms", type=int, default=2000)
    parser.add_argument(
        "--max-concurrent-chats", type=int, default=64, help="bus.max_concurrent_chats of every process (64)"
    )
    parser.add_argument("--failover", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--only-failover", action="store_true", help="skip the throughput and hop figures")
    parser.add_argument(
        "--kill-gateway", action="store_true", help="only the gateway SIGKILL under load (one JSON line of figures)"
    )
    parser.add_argument("--busy-loops", type=int, default=0, help="CPU hogs beside the run (a loaded machine)")
    asyncio.run(main(parser.parse_args()))
