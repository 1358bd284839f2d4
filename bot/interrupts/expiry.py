"""Expiry of pending interrupts: their timers, and the watch that expires them when one fires.

The timers are event-loop timers, re-made from the table at every start.  The run manager schedules one when a run
pauses; the resolver unschedules it when the interrupt is resolved; :class:`Expiries` takes due ids from
:meth:`ExpiryTimers.next_due` and ends their interrupts.  A queue between the two keeps the dependency one way (no
callback patched onto the manager).  What expired while the gateway was down expires at start-up
(:meth:`Expiries.reconcile`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from bot.clock import SYSTEM_CLOCK, Clock, Timer
from bot.fencing import NO_FENCES, Fences, LeaseLost, fenced
from bot.store.ports import Runs
from bot.store.rows import InterruptRow

log = logging.getLogger(__name__)

DENIED_EXPIRED = "denied: not confirmed in time"


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


class Ending(Protocol):
    """Ends a pending interrupt without an answer (:meth:`bot.interrupts.resolving.Resolver.end`)."""

    async def __call__(self, row: InterruptRow, status: str, reason: str, outcome: str) -> bool: ...


class Expiries:
    """Expires pending interrupts as their timers fire, each in a task of its own, and at start-up those whose time
    passed while nobody watched them; an expiry acts for its chat only while this process holds its partition
    (``fences``)."""

    def __init__(self, timers: ExpiryTimers, runs: Runs, end: Ending, fences: Fences = NO_FENCES) -> None:
        self.timers = timers
        self.runs = runs
        self.end = end
        self.fences = fences
        self._expiring: set[asyncio.Task[None]] = set()
        self._watcher: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Expire interrupts as their timers fire (each expiry in a task of its own)."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(), name="interrupt-expiry")

    async def _watch(self) -> None:
        while True:
            interrupt_id = await self.timers.next_due()
            task = asyncio.create_task(self.expire(interrupt_id), name=f"expire-{interrupt_id}")
            self._expiring.add(task)
            task.add_done_callback(self._expiring.discard)

    async def drain(self) -> None:
        """Stop the timers and let expiries already running finish."""
        self.timers.stop()
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
            self._watcher = None
        if self._expiring:
            await asyncio.gather(*list(self._expiring), return_exceptions=True)

    async def expire(self, interrupt_id: str) -> None:
        row = await self.runs.get_interrupt(interrupt_id)
        if row is None or row.status != "pending":
            return
        text = "⌛ Expired: not confirmed in time, nothing was run." if row.kind == "tool_confirm" else "⌛ Expired."
        with fenced(self.fences.fence_for(row.chat_key)):
            try:
                await self.end(row, "expired", DENIED_EXPIRED, text)
            except LeaseLost:
                log.info("interrupt %s of %s: its partition moved; its new owner expires it", row.id, row.chat_key)

    async def reconcile(self, now: datetime | None = None, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Schedule every pending interrupt (of the chats ``owns`` selects); expire those whose time passed
        while nobody watched them.  Expiring is a conditional update: once, whoever else has a timer."""
        now = now or self.timers.clock.utcnow()
        expired = []
        for row in await self.runs.all_pending():
            if owns is not None and not owns(row.chat_key):
                continue
            if row.expires_at is not None and row.expires_at <= now:
                await self.expire(row.id)
                expired.append(row.id)
            else:
                self.timers.schedule(row.id, row.expires_at)
        return expired
