"""The Supervisor: every inbound event goes through the pipeline (:mod:`bot.gateway.pipeline`), in the chat's place
on the bus (one event per chat at a time).

The stages (:func:`bot.gateway.handling.build_pipeline`, in one list): identify → access → addressed → command →
media → then, as the chat's request, pending → route → run.  Every accepted message is stored before anything is
answered.  ``/cancel`` and ``/stop`` for a busy chat skip its queue (:class:`~bot.gateway.turns.ChatTurns` is the
bus's urgency predicate) and come to :meth:`Supervisor.handle_urgent`.

When the database cannot take the write that marks an event handled (a full disk, a lock), the event is not
dropped: the same write is tried again with backoff (:data:`RETRY_FIRST_S` doubling up to :data:`RETRY_CAP_S`)
while the chat keeps its place (its later events wait behind it, in order), and the person is told once that the
answer is delayed.  The inbox row's handled guard makes the event count once, however many attempts it took.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

from agents.messages import Message
from bot.access import AccessPolicy
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import LimitsSection
from bot.delivery import Delivery
from bot.events import Action, ChatKey, InboundEvent, InboundMessage, OutboundMessage
from bot.fencing import LeaseLost
from bot.gateway.pipeline import Arrival, Desk, Pipeline
from bot.gateway.settled import HandledEvents
from bot.gateway.turns import ChatTurns
from bot.interrupts.service import InterruptService
from bot.retry import Backoff, retry
from bot.runs.manager import RunManager
from bot.store.base import EventNotStored, StoreError, StoreUnavailable
from bot.store.ports import Runs, TurnStore
from bot.store.retry import DELAYED
from bot.store.values import Change
from bot.tracing.context import correlated

log = logging.getLogger(__name__)

NOT_STORED_LOG = "chat %s: event %s was not stored, so it is not handled (the platform was told): %s"

__all__ = ["DELAYED", "RETRY_CAP_S", "Supervisor"]

CRASHED = "⚠️ Something went wrong while answering; the error was logged and the request was stopped."
NOT_SAVED = "⚠️ I could not save your message, so I did not act on it."

RETRY_FIRST_S = 0.25
"""The first wait before trying a refused write again; each next wait doubles ..."""
RETRY_CAP_S = 5.0
"""... up to this: once the database answers again, a waiting chat goes on within about this long."""
BACKOFF = Backoff(first_s=RETRY_FIRST_S, cap_s=RETRY_CAP_S)
"""The waits between tries of a refused write (:func:`bot.retry.retry`)."""
RETRY_FOR_S = 3600.0
"""How long a write the database cannot take *now* (:class:`StoreUnavailable`) is tried again.  Past it, the event
stays stored and pending (the next start takes it up) and the chat's queue moves on."""
RETRY_ATTEMPTS = 3
"""Attempts at a write refused for any other reason (it may have failed only because it shared its batch with a
bad write; a write that is bad itself must not hold its chat for long)."""
_KEEP = 10_000
"""Chats whose last "delayed" notice is remembered."""


@dataclass
class Supervisor:
    """Runs each inbound event through the pipeline; marks events handled (retrying a refused write), speaks in
    chats, and runs each chat's request where ``/cancel`` can stop it (the pipeline's :class:`Desk`)."""

    limits: LimitsSection
    """``notice_interval_s``: how often a chat is told that its answer is delayed."""
    store: TurnStore
    delivery: Delivery
    manager: RunManager
    interrupts: InterruptService
    runs: Runs
    access: AccessPolicy
    turns: ChatTurns
    build_pipeline: InitVar[Callable[[Desk], Pipeline]]
    """The pipeline, built with this supervisor as its desk (:func:`bot.gateway.handling.build_pipeline`)."""
    clock: Clock = SYSTEM_CLOCK
    """Waits between attempts at a refused write, and the spacing of "delayed" notices."""
    handled: HandledEvents | None = None
    """Told when an event's handling commit is done (the web console awaits its presses)."""
    pipeline: Pipeline = field(init=False)
    _delayed: OrderedDict[ChatKey, float] = field(default_factory=OrderedDict)
    """When each chat was last told that its answer is delayed (monotonic clock)."""
    _notices: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self, build_pipeline: Callable[[Desk], Pipeline]) -> None:
        self.pipeline = build_pipeline(self)

    async def check_press(self, action: Action) -> str | None:
        """For adapters, before they publish a press: why it would be refused (a toast), or None."""
        admission = await self.access.admit(action)
        if not admission.allowed:
            return f"You are not allowed to use this bot (your id: {action.sender.id})."
        return await self.interrupts.check_press(action.model_copy(update={"sender": admission.sender}))

    # -- entry points -----------------------------------------------------------------------

    async def handle(self, event: InboundEvent) -> None:
        turn = Arrival.of(event)
        with correlated(turn.key):
            try:
                await self.pipeline.run(turn)
            finally:
                if self.handled is not None:
                    self.handled.handled(turn.key)

    async def handle_urgent(self, event: InboundEvent) -> None:
        """``/cancel`` or ``/stop`` while a run is busy: stop it now."""
        assert isinstance(event, InboundMessage)
        turn = Arrival.of(event)
        admission = await self.access.admit(event)
        if not admission.allowed or not await self.mark(turn):
            return
        sender, chat = admission.sender, turn.chat
        requester = self.turns.requester(chat)
        if requester is not None:
            if not AccessPolicy.may_answer(requester, sender):
                await self.notice(chat, AccessPolicy.ONLY_REQUESTER.format(what="stop"))
            elif self.turns.stop(chat):
                await self.notice(chat, "🚫 Stopped the running request.")
                return
            else:  # it ended meanwhile
                await self.notice(chat, "Nothing is running here any more.")
            return
        row = await self.runs.pending(turn.chat_key)
        if row is not None and not AccessPolicy.may_answer(row.requester, sender):
            await self.notice(chat, AccessPolicy.ONLY_REQUESTER.format(what="cancel"))
            return
        cancelled = await self.interrupts.cancel(chat, sender)
        await self.notice(chat, "Cancelled." if cancelled else "Nothing to cancel.")

    async def tracked(self, turn: Arrival, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the chat's own task, which ``/cancel`` may cancel while it runs.

        No task of its own: the chat's bus worker runs it.  A cancellation that
        ``/cancel`` asked for ends here; any other (shutdown) goes on.
        """
        chat = turn.chat
        # A press resumes the run of the person who was asked: the run is theirs, whoever pressed.
        requester = turn.pending.requester if turn.pending is not None else await self._press_requester(turn)
        task = self.turns.start(chat, requester)
        try:
            await work
        except EventNotStored as exc:  # its first write failed: the platform was told "not stored", nothing ran
            log.warning(NOT_STORED_LOG, chat, turn.key, exc)
            self.turns.done(chat)
        except asyncio.CancelledError:
            if not self.turns.stopping(chat):
                raise
            task.uncancel()
            self.turns.done(chat)
            await self.mark(turn)  # cancelled before its run began: handled
            await self._end_running(turn.chat_key, "cancelled")
        except Exception:
            log.exception("chat %s: run crashed", chat)
            self.turns.done(chat)
            # Handled, whatever happened: a message that crashes its handling must not crash every restart,
            # and its run ends as failed (never left "running" for ever).
            await self.mark(turn)
            if not await self._end_running(turn.chat_key, "failed", CRASHED):
                await self.notice(chat, CRASHED)
        finally:
            self.turns.end(chat)

    async def _press_requester(self, turn: Arrival) -> str:
        """Whose request a press runs on: the pending request's asker (the presser otherwise)."""
        if isinstance(turn.event, Action):
            row = await self.runs.pending(turn.chat_key)
            if row is not None:
                return row.requester
        return turn.sender.id

    async def _end_running(self, chat_key: str, status: str, notice: str | None = None) -> bool:
        """End the chat's running run(s) with ``status`` (and ``notice``); whether there was one."""
        ended = False
        for run in await self.runs.runs_with_status("running"):
            if run.chat_key == chat_key:
                reply = OutboundMessage(chat=run.chat, text=notice, kind="notice") if notice else None
                await self.manager.finish(run, status, [], reply)
                ended = True
        return ended

    # -- marking handled ----------------------------------------------------------------------

    async def mark(self, turn: Arrival, message: Message | None = None, *, extra: Sequence[Change] = ()) -> bool:
        """Mark the turn's event handled (with ``message`` and ``extra`` in the same write); False: handled before.

        A write the database refuses is tried again (see the module docstring) in the chat's place; False only
        when it gave up (the event stays pending, and the person was told).
        """
        key = turn.key
        try:  # the first try here, any others in _mark_again: a write that goes through costs no retry machinery
            accepted = await self.store.accept(key, turn.chat_key, message, extra=extra)
        except EventNotStored as exc:
            log.warning(NOT_STORED_LOG, turn.chat, key, exc)
            return False
        except StoreError as exc:
            again = await self._mark_again(turn, message, extra, exc)
            if again is None:
                return False
            accepted = again
        if self.handled is not None:
            self.handled.handled(key)
        return accepted

    async def _mark_again(
        self, turn: Arrival, message: Message | None, extra: Sequence[Change], first: StoreError
    ) -> bool | None:
        """:meth:`mark`'s write, refused at the first try, tried again on :data:`BACKOFF` (see the module docstring);
        None when it gave up (the event stays pending, and the person was told)."""
        key, chat = turn.key, turn.chat
        attempt, waited = 1, 0.0

        def delay_after(exc: Exception, _try: int) -> float | None:
            if isinstance(exc, EventNotStored) or not isinstance(exc, StoreError):
                return None
            gave_up = waited >= RETRY_FOR_S if isinstance(exc, StoreUnavailable) else attempt >= RETRY_ATTEMPTS
            return None if gave_up else BACKOFF.delay(attempt)

        async def write() -> bool:
            nonlocal attempt
            attempt += 1
            return await self.store.accept(key, turn.chat_key, message, extra=extra)

        def waiting(_exc: Exception, _try: int, delay: float) -> None:
            nonlocal waited
            waited += delay

        try:
            delay = delay_after(first, 1)
            if delay is None:
                raise first
            log.warning("chat %s: could not save event %s (trying again): %s", chat, key, first)
            self._tell_delayed(chat)
            await self.clock.sleep(delay)
            waited = delay
            accepted = await retry(write, delay_after, clock=self.clock, on_retry=waiting)
        except EventNotStored as exc:
            log.warning(NOT_STORED_LOG, chat, key, exc)
            return None
        except StoreError as exc:
            log.error("chat %s: gave up saving event %s after %d attempts: %s", chat, key, attempt, exc)
            kept = " It is kept: I will take it up after my next restart." if isinstance(exc, StoreUnavailable) else ""
            await self.notice(chat, NOT_SAVED + (kept or " Please resend."))
            return None
        log.info("chat %s: saved event %s at attempt %d, %.1f s late", chat, key, attempt, waited)
        return accepted

    def _tell_delayed(self, chat: ChatKey) -> None:
        """Say that the answer is delayed, at most once per chat per ``limits.notice_interval_s``; off the chat's
        path (a notice that cannot go out holds nothing up)."""
        now = self.clock.monotonic()
        told = self._delayed.get(chat)
        if told is not None and now - told < self.limits.notice_interval_s:
            return
        self._delayed[chat] = now
        self._delayed.move_to_end(chat)
        while len(self._delayed) > _KEEP:
            self._delayed.popitem(last=False)
        task = asyncio.ensure_future(self._notice_quietly(chat, DELAYED))
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    async def _notice_quietly(self, chat: ChatKey, text: str) -> None:
        try:
            await self.notice(chat, text)
        except (Exception, LeaseLost) as exc:
            log.warning("chat %s: could not send a notice: %s", chat, exc)

    async def send(self, message: OutboundMessage) -> str | None:
        return await self.delivery.send(message)

    async def notice(self, chat: ChatKey, text: str) -> None:
        await self.send(OutboundMessage(chat=chat, text=text, kind="notice"))
