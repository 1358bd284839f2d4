"""Time as a port, for ``agents``: what a model, a tool or a run reads of the clock and how it waits.

``agents`` imports neither ``bot`` nor ``channels``, so it states the part of the gateway's clock it uses here
(as :mod:`agents.context` states the run context): ``bot.clock.SystemClock`` and ``bot.clock.FakeClock`` fit
:class:`Clock` as they are, so the composition root hands the gateway's clock down and a test's ``FakeClock``
moves a model's retry back-off, an MCP server's reconnect back-off or the time a tool reports without real
waiting.  :data:`SYSTEM_CLOCK` is the default of every constructor that is not given one.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Wall time, monotonic time and sleeping (a subset of ``bot.clock.Clock``)."""

    def time(self) -> float:
        """Wall time: seconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back (for intervals)."""

    def now(self) -> datetime:
        """Wall time as an aware UTC datetime."""

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()
"""The default for constructors that are not given a clock."""
