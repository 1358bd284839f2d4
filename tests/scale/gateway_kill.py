"""The gateway-kill scenario, shared by ``test_gateway_kill.py`` and ``bench/scaleout.py --kill-gateway``.

One gateway and three workers serve ``chats`` chats in a closed loop (each chat sends its next message through the
Telegram webhook once the answer to its last one reached the fake Bot API).  Once every chat has been answered
``warm`` times the gateway is SIGKILLed and a new one started on the same port; the loop keeps going until every
chat has been answered after the new gateway was ready, then stops and waits for what is still on its way.

Figures (seconds; ``ready`` is the moment the new gateway printed its ready line):

- ``ready_s``: from the kill to ``ready``;
- ``first_reply_after_ready_s``: from ``ready`` to the first answer the new gateway sent (negative: before its ready
  line, which follows the relay's start);
- ``wait_s``: per chat, from the kill to the chat's first answer after it (p50, p99, max);
- ``beyond_ready_s``: per chat, from ``ready`` to that answer (max; what the 5 s promise is about);
- ``latency_before_s``: p99 of a message's round trip (webhook to answer) before the kill: what a message takes on
  this machine anyway (a test's margin for a busy one);
- ``lost``: messages accepted by a webhook and never answered; ``doubled``: answers that arrived more than once,
  and ``doubled_per_chat_max``: the most of them in one chat.

Nothing here waits for a fixed time: each wait ends when what it waits for happened, under a generous ceiling.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.channels._intake_gateway import WEBHOOK_SECRET
from tests.fakes.telegram_server import FakeTelegram
from tests.scale.harness import Cluster
from tests.waiting import CEILING_S

FIRST_CHAT = 60_000


@dataclass
class Answers:
    """When each answer text reached the fake Bot API (every arrival), and waiters for the first one."""

    arrived: dict[str, list[float]] = field(default_factory=dict)
    waiting: dict[str, asyncio.Future[float]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def install(self, fake: FakeTelegram) -> None:
        """Note every ``sendMessage`` the gateway makes (the fake stays the network seam; this only watches it)."""
        original = fake._api_sendMessage

        async def noting(params: dict[str, Any]) -> Any:
            text, now = str(params.get("text", "")), time.monotonic()
            self.arrived.setdefault(text, []).append(now)
            waiter = self.waiting.pop(text, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)
            self.changed.set()
            return await original(params)

        fake._api_sendMessage = noting  # type: ignore[method-assign]

    async def first(self, text: str, timeout: float) -> float:
        if text in self.arrived:
            return self.arrived[text][0]
        waiter = self.waiting.setdefault(text, asyncio.get_running_loop().create_future())
        async with asyncio.timeout(timeout):
            return await asyncio.shield(waiter)


@dataclass
class Figures:
    chats: int
    messages: int
    ready_s: float
    first_reply_after_ready_s: float
    wait_s: dict[str, float]
    beyond_ready_s: float
    latency_before_s: float
    lost: int
    doubled: int
    doubled_per_chat_max: int
    late_chats: list[int]
    """Chats first answered more than 5 s after ``ready``."""

    def json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "late_chats"} | {"late_chats": len(self.late_chats)}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q + 0.5) - 1))], 2)


async def kill_gateway_under_load(
    cluster: Cluster, fake: FakeTelegram, *, chats: int, warm: int = 2, answer_timeout: float = 4 * CEILING_S
) -> Figures:
    answers = Answers()
    answers.install(fake)
    await cluster.start("gateway", "gateway")
    await asyncio.gather(*(cluster.start(f"worker-{n}", "worker") for n in (1, 2, 3)))
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10), connector=aiohttp.TCPConnector(limit=64))
    headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    sent: dict[str, int] = {}
    done: Counter[int] = Counter()
    firsts: dict[int, float] = {}
    """Per chat: when its first answer after the kill arrived."""
    latencies: list[float] = []
    """Round trips of the messages sent and answered before the kill."""
    killed: float | None = None
    stopping = False

    async def deliver(update: dict[str, Any]) -> None:
        """Until answered 200, as Telegram retries (the same update id); a refused connection is retried."""
        deadline = time.monotonic() + answer_timeout
        while True:
            try:
                async with session.post(cluster.webhook, json=update, headers=headers) as response:
                    if response.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"update {update['update_id']} not accepted for {answer_timeout:g} s")
            await asyncio.sleep(0.1)  # polls: the webhook is down while no gateway runs

    async def chat(n: int) -> None:
        chat_id, i = FIRST_CHAT + n, 0
        while not stopping:
            text = f"k{chat_id}-{i}"
            began = time.monotonic()
            await deliver({"update_id": chat_id * 10_000 + i, **fake.message(text, chat_id=chat_id, user_id=chat_id)})
            sent[text] = chat_id
            try:
                at = await answers.first("echo: " + text, answer_timeout)
            except TimeoutError:
                return  # lost: counted below
            if killed is not None and at > killed:
                firsts.setdefault(chat_id, at)
            elif killed is None:
                latencies.append(at - began)
            done[chat_id] += 1
            answers.changed.set()
            i += 1

    async def until(check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + answer_timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"still waiting after {answer_timeout:g} s for {what}")
            answers.changed.clear()
            try:
                async with asyncio.timeout(1.0):
                    await answers.changed.wait()
            except TimeoutError:
                pass

    loops = [asyncio.create_task(chat(n)) for n in range(chats)]
    try:
        await until(lambda: len(done) == chats and min(done.values()) >= warm, "every chat answered before the kill")
        victim = cluster.procs.pop("gateway")
        victim.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await victim.wait()
        spawned = time.monotonic()
        await cluster.start("gateway-2", "gateway")
        ready = time.monotonic()

        await until(lambda: len(firsts) == chats, "every chat answered after the kill")
        stopping = True
        await asyncio.gather(*loops)
    finally:
        stopping = True
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        await session.close()
    assert killed is not None
    waits = [t - killed for t in firsts.values()]
    lost = [text for text in sent if "echo: " + text not in answers.arrived]
    doubled = [text for text, ts in answers.arrived.items() if text.startswith("echo: k") and len(ts) > 1]
    per_chat = Counter(int(text.split("-")[0].removeprefix("echo: k")) for text in doubled)
    return Figures(
        chats=chats,
        messages=len(sent),
        ready_s=round(ready - killed, 2),
        # Sent by the new gateway (which may send what it took over just before its ready line).
        first_reply_after_ready_s=round(
            min(t for ts in answers.arrived.values() for t in ts if t > spawned) - ready, 2
        ),
        wait_s={
            "p50": round(statistics.median(waits), 2),
            "p99": _pct(waits, 0.99),
            "max": round(max(waits), 2),
        },
        beyond_ready_s=round(max(firsts.values()) - ready, 2),
        latency_before_s=_pct(latencies, 0.99),
        lost=len(lost),
        doubled=len(doubled),
        doubled_per_chat_max=max(per_chat.values(), default=0),
        late_chats=sorted(c for c, t in firsts.items() if t - ready > 5.0),
    )
