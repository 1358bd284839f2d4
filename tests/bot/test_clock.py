"""The clock port: the fake one tests drive, and the system one the gateway runs on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.clock import SYSTEM_CLOCK, FakeClock, SameDelay, TooManyTimers


async def test_time_stands_still_until_advanced() -> None:
    clock = FakeClock(datetime(2026, 3, 29, 0, 30, tzinfo=UTC))
    start, mono = clock.time(), clock.monotonic()
    await asyncio.sleep(0.01)
    assert (clock.time(), clock.monotonic()) == (start, mono)
    await clock.advance(90)
    assert clock.time() - start == 90 and clock.monotonic() - mono == 90
    assert clock.now() == datetime(2026, 3, 29, 0, 31, 30, tzinfo=UTC)
    assert clock.utcnow() == datetime(2026, 3, 29, 0, 31, 30) and clock.utcnow().tzinfo is None
    with pytest.raises(ValueError):
        await clock.advance(-1)


async def test_sleepers_wake_in_deadline_order_when_their_time_comes() -> None:
    clock = FakeClock()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("c", 30), ("a", 10), ("b", 20))]
    await clock.armed(3)
    await clock.advance(9)
    assert woke == []
    await clock.advance(11)
    assert woke == ["a", "b"]
    await clock.advance(3600)
    assert woke == ["a", "b", "c"]
    await asyncio.gather(*tasks)


async def test_a_timer_can_be_cancelled_and_a_jump_fires_a_repeating_loop_once() -> None:
    clock = FakeClock()
    fired: list[str] = []
    timer = clock.call_later(5, lambda: fired.append("cancelled"))
    timer.cancel()
    ticks = 0

    async def every_second() -> None:
        nonlocal ticks
        while True:
            await clock.sleep(1)
            ticks += 1

    loop = asyncio.create_task(every_second())
    await clock.armed(1)
    await clock.advance(3600)  # like a machine that slept through the hour: the loop wakes once
    assert fired == [] and ticks == 1
    for _ in range(3):
        await clock.advance(1)
    assert ticks == 4
    loop.cancel()


async def test_wait_returns_on_the_event_or_at_the_timeout() -> None:
    clock = FakeClock()
    event = asyncio.Event()
    waiting = asyncio.create_task(clock.wait(event, 60))
    await clock.armed(1)
    event.set()
    assert await waiting is True
    timing_out = asyncio.create_task(clock.wait(asyncio.Event(), 60))
    await clock.armed(1)
    await clock.advance(60)
    assert await timing_out is False
    assert clock.pending == 0, "nothing left armed"


async def test_a_loop_that_never_sleeps_long_enough_is_reported() -> None:
    clock = FakeClock(max_timers_per_advance=100)

    def again() -> None:
        clock.call_later(0, again)

    clock.call_later(0, again)
    with pytest.raises(TooManyTimers):
        await clock.advance(1)


async def test_the_system_clock_sleeps_and_waits_for_real() -> None:
    event = asyncio.Event()
    asyncio.get_running_loop().call_soon(event.set)
    assert await SYSTEM_CLOCK.wait(event, 60) is True
    assert await SYSTEM_CLOCK.wait(asyncio.Event(), 0) is False
    fired = asyncio.Event()
    SYSTEM_CLOCK.call_later(0, fired.set)
    await asyncio.wait_for(fired.wait(), 60)
    assert abs(SYSTEM_CLOCK.now().timestamp() - SYSTEM_CLOCK.time()) < 1


async def test_same_delay_timers_fire_in_order_once_each_and_never_when_cancelled() -> None:
    clock = FakeClock()
    timers = SameDelay(clock, 1.0)
    fired: list[str] = []
    a = timers.call_later(lambda: fired.append("a"))
    await clock.advance(0.4)
    b = timers.call_later(lambda: fired.append("b"))
    timers.call_later(lambda: fired.append("c"))
    a.cancel()
    await clock.advance(0.7)  # a's deadline passed (cancelled), b's and c's not yet
    assert fired == []
    await clock.advance(0.3)
    assert fired == ["b", "c"]
    b.cancel()  # too late: it fired already
    d = timers.call_later(lambda: fired.append("d"))
    d.cancel()

    def fail() -> None:
        raise RuntimeError("a failing callback does not stop the next")

    timers.call_later(fail)
    timers.call_later(lambda: fired.append("e"))
    await clock.advance(5)
    assert fired == ["b", "c", "e"]
