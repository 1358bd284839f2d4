"""The one retry helper (bot/retry.py) and the one rate limiter (bot/limits.py), on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from bot.clock import FakeClock
from bot.limits import TokenBuckets
from bot.retry import Backoff, retry


class Flaky:
    """Fails with ``errors`` in turn, then returns ``"done"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_backoff_doubles_up_to_its_cap() -> None:
    backoff = Backoff(first_s=0.25, cap_s=5.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


async def test_retry_waits_on_the_clock_it_is_given() -> None:
    clock = FakeClock()
    flaky, told = Flaky(OSError("down"), OSError("still down")), []
    task = asyncio.create_task(
        retry(flaky, Backoff(1.0, 60.0).on(OSError), clock=clock, on_retry=lambda e, n, d: told.append((str(e), n, d)))
    )
    await clock.armed(1)
    assert flaky.calls == 1 and not task.done()
    await clock.advance(1.0)
    await clock.armed(1)
    assert flaky.calls == 2
    await clock.advance(2.0)
    assert await task == "done" and flaky.calls == 3
    assert told == [("down", 1, 1.0), ("still down", 2, 2.0)]


async def test_what_is_not_retried_goes_to_the_caller_at_once() -> None:
    flaky = Flaky(ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        await retry(flaky, Backoff().on(OSError), clock=FakeClock())
    assert flaky.calls == 1


async def test_it_gives_up_after_its_attempts_or_its_budget_with_the_last_error() -> None:
    clock = FakeClock()
    flaky = Flaky(*(OSError(f"try {n}") for n in range(1, 10)))
    task = asyncio.create_task(retry(flaky, lambda e, n: 0.0, clock=clock, attempts=3))
    with pytest.raises(OSError, match="try 3"):
        await task
    assert flaky.calls == 3
    flaky = Flaky(*(OSError(f"try {n}") for n in range(1, 10)))
    task = asyncio.create_task(retry(flaky, lambda e, n: 10.0, clock=clock, budget_s=25.0))
    await clock.armed(1)
    await clock.advance(10)
    await clock.armed(1)
    await clock.advance(10)
    with pytest.raises(OSError, match="try 3"):  # a third wait would end 30 s after the start
        await task


async def test_delay_after_may_give_up_with_its_own_error() -> None:
    def delay_after(exc: Exception, attempt: int) -> float:
        raise RuntimeError(f"gave up after {attempt}: {exc}")

    with pytest.raises(RuntimeError, match="gave up after 1: down"):
        await retry(Flaky(OSError("down")), delay_after, clock=FakeClock())


def test_take_refuses_past_the_burst_until_the_bucket_refills() -> None:
    buckets = TokenBuckets(rate_per_s=1 / 60, burst=2, clock=lambda: 0.0)
    assert [buckets.take("ann", now=0.0) for _ in range(3)] == [True, True, False]
    assert buckets.take("bob", now=0.0)  # each key its own bucket
    assert not buckets.take("ann", now=59.0)
    assert buckets.take("ann", now=60.0)
    buckets.give_back("ann")
    assert buckets.take("ann", now=60.0) and not buckets.take("ann", now=60.0)


def test_reserve_paces_into_debt_and_a_hold_delays_the_key() -> None:
    now = [100.0]
    buckets = TokenBuckets(rate_per_s=2.0, burst=3, clock=lambda: now[0])
    assert [buckets.reserve("c") for _ in range(5)] == [0.0, 0.0, 0.0, 0.5, 1.0]
    now[0] += 1.0
    assert buckets.reserve("c") == 0.5
    buckets.hold("d", 30.0)
    assert buckets.reserve("d") == 30.0


def test_the_least_recently_used_key_is_forgotten() -> None:
    buckets = TokenBuckets(rate_per_s=0.0, burst=1, max_keys=2, clock=lambda: 0.0)
    assert buckets.take("a") and buckets.take("b") and buckets.take("c")
    assert len(buckets) == 2
    assert buckets.take("a")  # forgotten, so a fresh bucket
    assert not buckets.take("c")
