"""Time as a port: what the gateway reads of the clock and how it waits.

Everything that waits on time (interrupt expiry, scheduled messages, job ticks, lease upkeep, rate-limit
buckets, streaming edit intervals, retention and flush loops) takes a :class:`Clock` from the composition
root instead of calling ``time``, ``datetime.now`` or ``asyncio.sleep`` itself.  :class:`SystemClock` is the
real one; :class:`FakeClock` is for tests: its time stands still until the test advances it, and advancing
runs the timers that fall due, in order, so a test of a one-hour expiry takes no hour and no real sleep.

Stamps (a row's ``created_at``) may still come from the real clock: only deadlines and waits go through here.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

log = logging.getLogger(__name__)


class Timer(Protocol):
    """A callback scheduled on a clock."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Wall time, monotonic time, sleeping and timers."""

    def time(self) -> float:
        """Wall time: seconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back (for intervals)."""

    def now(self) -> datetime:
        """Wall time as an aware UTC datetime."""

    def utcnow(self) -> datetime:
        """Wall time as a naive UTC datetime (the schema's representation)."""

    async def sleep(self, seconds: float) -> None: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` (on the event loop) after ``delay`` seconds."""

    async def wait(self, event: asyncio.Event, timeout: float | None) -> bool:
        """Wait until ``event`` is set (True) or ``timeout`` seconds passed (False)."""


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def utcnow(self) -> datetime:
        return datetime.now(UTC).replace(tzinfo=None)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)

    async def wait(self, event: asyncio.Event, timeout: float | None) -> bool:
        if event.is_set():
            return True
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return event.is_set()
        return True


SYSTEM_CLOCK = SystemClock()
"""The default for constructors that are not given a clock."""


@dataclass(order=True)
class _Entry:
    deadline: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class TooManyTimers(RuntimeError):
    """:meth:`FakeClock.advance` ran more timers than it allows: a loop that sleeps too briefly to step through."""


class FakeClock:
    """A clock for tests: time moves only when :meth:`advance` says so.

    Wall and monotonic time move together (wall time starts at ``start``, by default the real time now, so rows
    stamped by the real clock sort sensibly beside it).  ``advance`` jumps to the new time, then runs the timers
    that fell due, in deadline order, letting the woken tasks run after each: like a machine that slept through
    the interval, a loop that re-arms fires once, not once per period missed (advance in steps to see each).
    """

    SETTLE_PASSES = 20
    """Event-loop turns given to woken tasks after each timer (they re-arm, hand work on, ...)."""

    def __init__(self, start: datetime | float | None = None, *, max_timers_per_advance: int = 100_000) -> None:
        if start is None:
            start = time.time()
        self._wall0 = start.timestamp() if isinstance(start, datetime) else float(start)
        self._elapsed = 0.0
        self._timers: list[_Entry] = []
        self._seq = itertools.count()
        self.max_timers_per_advance = max_timers_per_advance

    # -- reading -------------------------------------------------------------------------------

    def time(self) -> float:
        return self._wall0 + self._elapsed

    def monotonic(self) -> float:
        return 1_000.0 + self._elapsed

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)

    def utcnow(self) -> datetime:
        return self.now().replace(tzinfo=None)

    # -- waiting -------------------------------------------------------------------------------

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        entry = _Entry(self._elapsed + max(0.0, delay), next(self._seq), callback)
        heapq.heappush(self._timers, entry)
        return entry

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    async def wait(self, event: asyncio.Event, timeout: float | None) -> bool:
        if event.is_set():
            return True
        waiter = asyncio.ensure_future(event.wait())
        sleeper = asyncio.ensure_future(self.sleep(timeout)) if timeout is not None else None
        try:
            await asyncio.wait({waiter, *([sleeper] if sleeper else [])}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, sleeper):
                if task is not None and not task.done():
                    task.cancel()
        return event.is_set()

    # -- driving (tests) -------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Timers armed and not cancelled (a test may wait until a component is asleep)."""
        return sum(1 for t in self._timers if not t.cancelled)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, running every timer that falls due on the way, in order."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._elapsed += seconds
        ran = 0
        while self._timers and self._timers[0].deadline <= self._elapsed:
            entry = heapq.heappop(self._timers)
            if entry.cancelled:
                continue
            ran += 1
            if ran > self.max_timers_per_advance:
                raise TooManyTimers(f"more than {self.max_timers_per_advance} timers in one advance of {seconds} s")
            entry.callback()
            await self.settle()
        await self.settle()

    async def advance_to(self, moment: datetime | float) -> None:
        """Move time forward to ``moment`` (an aware datetime or epoch seconds), running the timers on the way."""
        target = moment.timestamp() if isinstance(moment, datetime) else float(moment)
        await self.advance(max(0.0, target - self.time()))

    async def settle(self) -> None:
        """Give woken tasks a few turns of the event loop."""
        for _ in range(self.SETTLE_PASSES):
            await asyncio.sleep(0)

    async def armed(self, count: int = 1, timeout: float = 60.0) -> None:
        """Wait (polling real time, bounded) until at least ``count`` timers are armed: components went to sleep."""
        async with asyncio.timeout(timeout):
            while self.pending < count:  # noqa: ASYNC110 - timers are armed by plain calls: nothing to wait on
                await asyncio.sleep(0.002)


class _Due:
    __slots__ = ("deadline", "callback", "cancelled")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline, self.callback, self.cancelled = deadline, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class SameDelay:
    """Timers that all wait the same ``delay`` (a run's typing indicator): one clock timer serves them all.

    Their deadlines come in the order they were set, so a queue holds them sorted and one timer, for the first
    that is not cancelled, is armed at a time.  Setting and cancelling are O(1); a timer of the event loop each
    costs a push into its heap and a pop out of it, past every other one pending (about 1,500 at 1,500 runs a
    second that each cancel theirs after a few milliseconds).
    """

    def __init__(self, clock: Clock, delay: float) -> None:
        self.clock = clock
        self.delay = max(0.0, delay)
        self._queue: collections.deque[_Due] = collections.deque()
        self._armed: Timer | None = None

    def call_later(self, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` ``delay`` seconds from now, unless cancelled first."""
        due = _Due(self.clock.monotonic() + self.delay, callback)
        self._queue.append(due)
        if self._armed is None:
            self._arm()
        return due

    def _arm(self) -> None:
        queue = self._queue
        while queue and queue[0].cancelled:
            queue.popleft()
        if queue:
            self._armed = self.clock.call_later(queue[0].deadline - self.clock.monotonic(), self._fire)

    def _fire(self) -> None:
        self._armed = None
        now, queue = self.clock.monotonic(), self._queue
        while queue and (queue[0].cancelled or queue[0].deadline <= now):
            due = queue.popleft()
            if not due.cancelled:
                try:
                    due.callback()
                except Exception:  # one failing callback neither stops the others nor the timer
                    log.exception("a timer's callback failed")
        self._arm()
