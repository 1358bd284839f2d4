"""The one way to try something again: :func:`retry` calls until it works, waiting between tries on the clock it
is given (a test's :class:`~bot.clock.FakeClock` too); what is retried, after how long and when to give up is
the caller's (:class:`Backoff` for the usual doubling delays)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from bot.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")

DelayAfter = Callable[[Exception, int], float | None]
"""``(error, attempt)`` → seconds to wait before trying again, None when that error is not retried (it goes to
the caller); it may also raise an error of its own to give up with it.  ``attempt`` counts from 1."""


@dataclass(frozen=True)
class Backoff:
    """Delays that double from ``first_s`` up to ``cap_s``."""

    first_s: float = 1.0
    cap_s: float = 60.0
    factor: float = 2.0

    def delay(self, attempt: int) -> float:
        """The wait after failed try number ``attempt`` (1: ``first_s``)."""
        return min(self.cap_s, self.first_s * self.factor ** max(0, attempt - 1))

    def on(self, *errors: type[Exception]) -> DelayAfter:
        """Retry ``errors`` (and their subclasses) with these delays, nothing else."""
        return lambda exc, attempt: self.delay(attempt) if isinstance(exc, errors) else None


async def retry(
    call: Callable[[], Awaitable[T]],
    delay_after: DelayAfter,
    *,
    clock: Clock = SYSTEM_CLOCK,
    attempts: int | None = None,
    budget_s: float | None = None,
    on_retry: Callable[[Exception, int, float], None] | None = None,
) -> T:
    """``await call()``, again after each error ``delay_after`` retries, until it returns.

    Gives up, re-raising the last error, after ``attempts`` tries, or when the next wait would end more than
    ``budget_s`` after the first try began.  ``on_retry(error, attempt, delay)`` is told before each wait (to
    log it, or to tell someone once).  Cancellation is never retried.
    """
    began = clock.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as exc:
            delay = delay_after(exc, attempt)
            out_of_tries = attempts is not None and attempt >= attempts
            if delay is None or out_of_tries or (budget_s is not None and clock.monotonic() + delay - began > budget_s):
                raise
            if on_retry is not None:
                on_retry(exc, attempt, delay)
        await clock.sleep(delay)
