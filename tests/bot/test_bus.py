"""The in-memory bus: order per chat, concurrency across chats, backpressure, no leftovers."""

from __future__ import annotations

import asyncio

import pytest

from bot.bus import BusClosed, InMemoryBus
from bot.events import ChatKey, InboundEvent, InboundMessage, Sender
from tests.waiting import CEILING_S


def msg(chat: str, n: int) -> InboundMessage:
    return InboundMessage(id=f"{chat}-{n}", chat=ChatKey(channel="t", chat_id=chat), sender=Sender(id="u"), text=str(n))


async def test_one_chat_in_arrival_order_one_at_a_time() -> None:
    bus = InMemoryBus(max_concurrent=8)
    seen: list[str] = []
    running = 0
    peak = 0

    async def handler(event: InboundEvent) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        seen.append(event.text)  # type: ignore[union-attr]
        running -= 1

    bus.subscribe(handler)
    for n in range(50):
        await bus.publish(msg("a", n))
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert seen == [str(n) for n in range(50)]
    assert peak == 1


async def test_concurrency_capped_across_chats() -> None:
    bus = InMemoryBus(max_concurrent=3)
    running = 0
    peak = 0

    async def handler(event: InboundEvent) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1

    bus.subscribe(handler)
    for chat in range(10):
        await bus.publish(msg(str(chat), 0))
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert peak == 3


async def test_blocked_chat_does_not_block_another() -> None:
    bus = InMemoryBus(max_concurrent=4)
    release = asyncio.Event()
    done: list[str] = []

    async def handler(event: InboundEvent) -> None:
        if event.chat.chat_id == "a":
            await release.wait()
        done.append(event.chat.chat_id)

    bus.subscribe(handler)
    await bus.publish(msg("a", 1))
    await bus.publish(msg("a", 2))
    await bus.publish(msg("b", 1))
    for _ in range(100):
        if "b" in done:
            break
        await asyncio.sleep(0.005)
    assert done == ["b"]
    release.set()
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert done == ["b", "a", "a"]


async def test_backpressure_waits_and_loses_nothing() -> None:
    bus = InMemoryBus(max_concurrent=2, max_pending=5)
    gate = asyncio.Event()
    handled: list[str] = []

    async def handler(event: InboundEvent) -> None:
        await gate.wait()
        handled.append(event.id)

    bus.subscribe(handler)
    for n in range(5):
        await bus.publish(msg(str(n), 0))
    sixth = asyncio.create_task(bus.publish(msg("x", 0)))
    await asyncio.sleep(0.05)
    assert not sixth.done(), "a producer past max_pending must wait"
    gate.set()
    await asyncio.wait_for(sixth, CEILING_S)
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert sorted(handled) == sorted([f"{n}-0" for n in range(5)] + ["x-0"])


async def test_no_per_chat_state_left_after_many_chats() -> None:
    bus = InMemoryBus(max_concurrent=64, max_pending=1000)
    count = 0

    async def handler(event: InboundEvent) -> None:
        nonlocal count
        count += 1

    bus.subscribe(handler)
    # 20,000 chats, twenty times the pending bound: what is kept per chat would show (100,000 took 11 s of the
    # suite's CPU for the same answer).
    for n in range(20_000):
        await bus.publish(msg(str(n), 0))
    await asyncio.wait_for(bus.join(), 60)
    assert count == 20_000
    assert bus.active_chats == 0
    assert not bus._lanes._queues and not bus._lanes._workers


async def test_handler_error_does_not_stop_the_chat() -> None:
    bus = InMemoryBus()
    seen: list[str] = []

    async def handler(event: InboundEvent) -> None:
        if event.text == "0":  # type: ignore[union-attr]
            raise ValueError("boom")
        seen.append(event.text)  # type: ignore[union-attr]

    bus.subscribe(handler)
    await bus.publish(msg("a", 0))
    await bus.publish(msg("a", 1))
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert seen == ["1"]


async def test_close_drains_then_refuses() -> None:
    bus = InMemoryBus()
    done: list[str] = []

    async def handler(event: InboundEvent) -> None:
        await asyncio.sleep(0.01)
        done.append(event.id)

    bus.subscribe(handler)
    await bus.publish(msg("a", 0))
    await bus.close(timeout=5)
    assert done == ["a-0"]
    with pytest.raises(BusClosed):
        await bus.publish(msg("a", 1))


async def test_a_busy_chat_takes_its_turn_behind_waiting_chats() -> None:
    """With every handler busy, a chat goes to the back of the line after each of its events: a chat with many
    events cannot keep its place ahead of chats that arrived meanwhile."""
    bus = InMemoryBus(max_concurrent=1)
    gate = asyncio.Event()
    order: list[str] = []

    async def handler(event: InboundEvent) -> None:
        await gate.wait()
        order.append(event.id)

    bus.subscribe(handler)
    for n in range(3):
        await bus.publish(msg("a", n))
    await bus.publish(msg("b", 0))
    await bus.publish(msg("c", 0))
    gate.set()
    await asyncio.wait_for(bus.join(), CEILING_S)
    assert order == ["a-0", "b-0", "c-0", "a-1", "a-2"]


async def test_work_after_the_workers_ended_is_picked_up() -> None:
    """The pool's workers end when nothing waits; an event published afterwards starts one again."""
    bus = InMemoryBus(max_concurrent=2)
    handled: list[str] = []

    async def handler(event: InboundEvent) -> None:
        handled.append(event.id)

    bus.subscribe(handler)
    for round_ in range(3):
        for chat in ("a", "b", "c"):
            await bus.publish(msg(chat, round_))
        await asyncio.wait_for(bus.join(), CEILING_S)
    assert sorted(handled) == sorted(f"{c}-{r}" for c in "abc" for r in range(3))
    assert bus.active_chats == 0
