"""Expiry timers of pending interrupts: event-loop timers, re-made from the table at every start.

The run manager schedules one when a run pauses; the interrupt service unschedules it when the
interrupt is resolved and takes due ids from :meth:`ExpiryTimers.next_due` to expire them.  A queue
between the two keeps the dependency one way (no callback patched onto the manager).
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from bot.clock import SYSTEM_CLOCK, Clock, Timer


class ExpiryTimers:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._timers: dict[str, Timer] = {}
        self._due: asyncio.Queue[str] = asyncio.Queue()

    def schedule(self, interrupt_id: str, expires_at: datetime | None) -> None:
        """Expire ``interrupt_id`` at ``expires_at`` (None: never)."""
        if expires_at is None:
            return
        self.unschedule(interrupt_id)
        delay = max(0.0, (expires_at - self.clock.utcnow()).total_seconds())
        self._timers[interrupt_id] = self.clock.call_later(delay, lambda: self._fire(interrupt_id))

    def _fire(self, interrupt_id: str) -> None:
        self._timers.pop(interrupt_id, None)
        self._due.put_nowait(interrupt_id)

    def unschedule(self, interrupt_id: str) -> None:
        handle = self._timers.pop(interrupt_id, None)
        if handle is not None:
            handle.cancel()

    async def next_due(self) -> str:
        """The next interrupt whose deadline passed (waits for one)."""
        return await self._due.get()

    def stop(self) -> None:
        """Forget every timer (at shutdown; the next start re-reads the deadlines)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
