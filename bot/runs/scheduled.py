"""Scheduled messages: the gateway-owned ``schedule_message`` tool and its delivery.

A scheduled message is a row first (it survives restarts), then a timer on the
gateway's clock, re-armed from the table at start-up (or when a worker takes the
chat's partition); one that fell due while the gateway was down is sent at start,
marked late.
Sending is exactly once: the row moves from ``pending`` to ``sent`` in the same
transaction that puts the message in the outbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.tools.base import Tool, ToolContext, ToolError, tool
from bot.clock import SYSTEM_CLOCK, Clock, Timer
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.fencing import NO_FENCES, Fences, LeaseLost, fenced
from bot.ids import new_id
from bot.redaction import redact_text
from bot.store.ports import ScheduledRepo

log = logging.getLogger(__name__)

MAX_AHEAD = timedelta(days=366)
SCHEDULE_MESSAGE = "schedule_message"
TOOL_NAMES = (SCHEDULE_MESSAGE,)
"""The gateway tools this module makes (:func:`bot.runs.tool_names.known_tool_names` reads them)."""


def parse_when(at: str | None, in_minutes: float | None, now: datetime) -> datetime:
    """A naive-UTC due time from an ISO 8601 time (naive = UTC) or a number of minutes from now."""
    if in_minutes is not None:
        if in_minutes <= 0:
            raise ToolError("in_minutes must be more than 0")
        return now + timedelta(minutes=in_minutes)
    if not at:
        raise ToolError("give either 'at' (ISO 8601 time, e.g. 2026-05-01T17:00:00+02:00) or 'in_minutes'")
    try:
        when = datetime.fromisoformat(at.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"cannot read the time {at!r}; use ISO 8601 like 2026-05-01T17:00:00+02:00") from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    if when <= now:
        raise ToolError(f"{at} is in the past (it is now {now.isoformat(timespec='minutes')} UTC)")
    return when


class ScheduledMessages:
    def __init__(
        self,
        messages: ScheduledRepo,
        delivery: Delivery,
        clock: Clock = SYSTEM_CLOCK,
        fences: Fences = NO_FENCES,
        limits: tuple[int, int] = (50, 100),
    ) -> None:
        """``fences``: a message is sent for its chat only while this process holds the chat's partition;
        ``limits``: how many may be pending per chat and per person."""
        self.limits = limits
        self.fences = fences
        self.messages = messages
        self.delivery = delivery
        self.clock = clock
        self.timers: dict[str, Timer] | None = None
        """A timer per pending message (by id), from :meth:`start` on."""
        self._firing: set[asyncio.Task[bool]] = set()

    # -- the tool ----------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """``schedule_message`` (its name in :data:`TOOL_NAMES`)."""

        @tool(risk="low", name=SCHEDULE_MESSAGE)
        async def schedule_message(
            ctx: ToolContext, text: str, at: str | None = None, in_minutes: float | None = None
        ) -> str:
            """Send a message to this chat later: at an ISO 8601 time (with its UTC offset) or in N minutes."""
            now = self.clock.utcnow()
            due = parse_when(at, in_minutes, now)
            if due - now > MAX_AHEAD:
                raise ToolError("that is more than a year ahead")
            if not text.strip():
                raise ToolError("the message text is empty")
            kept = redact_text(text.strip())
            sid = await self.add(ctx.chat_key, kept, due, ctx.user_id or "agent")
            note = "" if kept == text.strip() else f"; a secret is not kept, it will read: {kept}"
            return f"scheduled {sid} for {due.isoformat(timespec='minutes')} UTC{note}"

        return [schedule_message]

    # -- rows -----------------------------------------------------------------------------------

    async def add(self, chat_key: str, text: str, due: datetime, by: str) -> str:
        """Store a message to send at ``due``; :class:`~agents.tools.base.ToolError` when the chat or the person
        has as many pending as :attr:`limits` allow (a model looping on the tool cannot flood a chat). A secret in
        ``text`` is stored, and sent, as ``‹redacted: kind›`` (:mod:`bot.redaction`)."""
        sid = new_id(8)
        refused = await self.messages.add(sid, chat_key, redact_text(text), due, by, self.clock.utcnow(), self.limits)
        if refused is not None:
            in_chat, of_person = refused
            if in_chat >= self.limits[0]:
                raise ToolError(
                    f"this chat has {in_chat} scheduled messages pending, the most it may have "
                    "(jobs.max_reminders_per_chat); /pending lists them, /cancel ID removes one"
                )
            raise ToolError(
                f"you have {of_person} scheduled messages pending, the most one person may have "
                "(jobs.max_reminders_per_user)"
            )
        self._schedule(sid, due)
        return sid

    async def pending(self, chat_key: str | None = None) -> list[dict[str, Any]]:
        rows = await self.messages.pending(chat_key)
        return [{"id": i, "chat_key": c, "text": t, "due_at": d} for i, c, t, d in rows]

    async def cancel(self, chat_key: str, sid: str, by: str | None = None) -> bool:
        """Cancel a pending message of the chat (``by``: only one that person scheduled)."""
        cancelled = await self.messages.cancel(chat_key, sid, by)
        if cancelled and self.timers is not None and (timer := self.timers.pop(sid, None)) is not None:
            timer.cancel()
        return cancelled

    # -- delivery -------------------------------------------------------------------------------

    def _schedule(self, sid: str, due: datetime) -> None:
        if self.timers is None:
            return
        old = self.timers.pop(sid, None)
        if old is not None:
            old.cancel()
        delay = (due - self.clock.utcnow()).total_seconds()
        self.timers[sid] = self.clock.call_later(delay, lambda: self._due(sid))

    def _due(self, sid: str) -> None:
        if self.timers is not None:
            self.timers.pop(sid, None)
        task = asyncio.ensure_future(self._fire_logged(sid))
        self._firing.add(task)
        task.add_done_callback(self._firing.discard)

    async def _fire_logged(self, sid: str) -> bool:
        try:
            return await self.fire(sid)
        except Exception:
            # The row stays pending: the next start (or the partition's next owner) sends it, marked late.
            log.exception("scheduled message %s could not be sent now", sid)
            return False

    async def fire(self, sid: str, late: bool = False) -> bool:
        found = await self.messages.get(sid)
        if found is None:
            return False
        chat_key, text = found
        body = (text if text.startswith("⏰") else f"⏰ {text}") + (
            "\n(delayed: I was offline when this was due)" if late else ""
        )
        message = OutboundMessage(chat=ChatKey.parse(chat_key), text=body, key=f"scheduled:{sid}")
        with fenced(self.fences.fence_for(chat_key)):
            try:
                return await self._send(sid, chat_key, message)
            except LeaseLost:
                log.info("scheduled message %s: its chat's partition moved; its new owner sends it", sid)
                return False

    async def _send(self, sid: str, chat_key: str, message: OutboundMessage) -> bool:
        outbox_id = await self.messages.send(sid, chat_key, message.model_dump_json())
        if outbox_id is None:
            return False
        await self.delivery.deliver(outbox_id, message)
        return True

    async def start(self, *, adopt: bool = True) -> int:
        """Start the timers; with ``adopt``, arm one for every pending message and send at once (and count)
        those that fell due while we were down.  A worker adopts per partition instead (:meth:`adopt`)."""
        self.timers = {}
        return await self.adopt(None) if adopt else 0

    async def adopt(self, owns: Callable[[str], bool] | None) -> int:
        """Schedule the pending messages of the chats ``owns`` selects (all: None); send the late ones now.

        Sending is a conditional update of the row, so a message another worker also scheduled goes once.
        """
        now = self.clock.utcnow()
        late = 0
        for row in await self.pending():
            if owns is not None and not owns(row["chat_key"]):
                continue
            if row["due_at"] <= now:
                late += await self.fire(row["id"], late=True)
            else:
                self._schedule(row["id"], row["due_at"])
        return late

    def stop(self) -> None:
        """Disarm every timer (the rows stay pending: the next start arms them again)."""
        for timer in (self.timers or {}).values():
            timer.cancel()
        self.timers = None
