"""The durable intake: the one door every inbound event comes through.

**Acknowledge only what is durable.**  :meth:`DurableInbox.submit` returns after the
event is committed (an ``inbox`` row, de-duplicated by its platform id); only then
may an adapter tell its platform "received" (advance Telegram's offset, answer a
webhook or Slack request with 200, ack a Socket Mode envelope).  A commit that
fails, or a closing inbox, raises :class:`~bot.inbox.NotStored`: the adapter then
does not acknowledge, and the platform delivers again.  Committed events go on the bus; the supervisor marks each one
handled in the same transaction as what it did, and recovery publishes the rows
left pending by a crash, in arrival order.

**Fair and bounded.**  Before anything is stored, cheap checks that cost no store write decide what a sender or
chat may have, and a fault is not a flood: :mod:`bot.gateway.admission`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from bot.access import AccessPolicy
from bot.bus import Bus, BusClosed, BusUnavailable
from bot.config.settings import LimitsSection
from bot.events import Action, InboundEvent, InboundMessage, event_key
from bot.gateway.admission import Admission, InboxStats, Notify
from bot.inbox import InboxClosed, NotStored, Receipt
from bot.ops.metrics import Metrics
from bot.store.base import EventLog, StoreError
from bot.store.values import Change

log = logging.getLogger(__name__)


class DurableInbox:
    """The :class:`~bot.inbox.Inbox` on the store's ``inbox`` table and an in-process :class:`~bot.bus.Bus`."""

    def __init__(
        self,
        store: EventLog,
        bus: Bus,
        *,
        access: AccessPolicy,
        limits: LimitsSection,
        notify: Notify,
        press_check: Callable[[Action], Awaitable[str | None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        handled_here: bool = True,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.access = access
        """Who may send (the one policy the supervisor, the console and the run manager use too)."""
        self.pairing = access.pairing
        """Codes for strangers (None: ``allow_from`` only)."""
        self.metrics = metrics
        self.handled_here = handled_here
        """The bus hands events to this process's supervisor (wrapped by :meth:`tracked`); False for a gateway
        whose workers handle them elsewhere (nothing here learns when they are done)."""
        self._press_check = press_check
        self.bus = bus
        self.limits = limits
        self._clock = clock
        self.stats = InboxStats()
        self._admission = Admission(access=access, limits=limits, bus=bus, notify=notify, clock=clock, stats=self.stats)
        """Who may have what before anything is stored, and the notices that say so."""
        self._inflight: set[str] = set()
        """Keys of events on the bus and not handled yet (a redelivery of one of them is a plain duplicate)."""
        self._closed = False

    # -- intake -------------------------------------------------------------------------------

    async def check_press(self, action: Action) -> str | None:
        """Why ``action`` would be refused (the supervisor's answer), or None."""
        return None if self._press_check is None else await self._press_check(action)

    async def submit(self, event: InboundEvent) -> Receipt:
        return (await self.submit_many((event,)))[0]

    async def submit_many(self, events: Sequence[InboundEvent]) -> list[Receipt]:
        if self._closed:
            raise InboxClosed("the gateway is shutting down")
        receipts: list[Receipt] = []
        admission = self._admission
        admitted: list[tuple[int, InboundEvent]] = []
        charged: list[str | None] = []
        """Per admitted event: the sender whose token it took."""
        for event in events:
            receipt, charge = await admission.admit(event)
            receipts.append(receipt)
            if receipt is Receipt.ACCEPTED:
                admitted.append((len(receipts) - 1, event))
                charged.append(charge)
            elif receipt is Receipt.REFUSED and self.metrics is not None:
                self.metrics.refused.labels(event.chat.channel).inc()
        if not admitted:
            return receipts
        steps = [
            self.store.receive_step(
                event_key(event),
                str(event.chat),
                "action" if isinstance(event, Action) else "message",
                event.model_dump_json(),
            )
            for _, event in admitted
        ]
        # Early when handled here; not with files (the handler reads them in before its first write).
        # Early when each is handled here at once (a saturated gateway commits rows first, as it acknowledges
        # sooner so); not with files (the handler reads them in before its first write), nor while an earlier
        # delivery of one of them is on the bus (its handler is the one to find its row).
        inflight, starts_now = self._inflight, self.bus.starts_now
        early = self.handled_here and all(
            starts_now(e.chat.as_str)
            and not (isinstance(e, InboundMessage) and e.attachments)
            and event_key(e) not in inflight
            for _, e in admitted
        )
        try:
            if early:
                stored = await self._receive_early(admitted, steps)
            else:
                stored = await self.store.receive(steps)
        except StoreError as exc:
            now = self._clock()
            for (_, event), charge in zip(admitted, charged, strict=True):
                admission.not_stored(event, charge, now)
            raise NotStored(f"the inbound events were not stored: {exc}") from exc
        except BaseException:
            for _, event in admitted:
                admission.release(event.chat)
            raise
        released = 0
        try:
            for (index, event), new, charge in zip(admitted, stored, charged, strict=True):
                admission.stored(event)
                if new:
                    self.stats.accepted += 1
                    if self.metrics is not None:
                        self._count(self.metrics, event)
                    if not early:
                        await self._publish(event)
                else:
                    self.stats.duplicates += 1
                    receipts[index] = Receipt.DUPLICATE
                    if charge is not None:
                        admission.give_back(charge)  # it took its token when it was stored
                    if not early:  # else it is on the bus already: its handler finds it handled, or handles it
                        await self._retry_if_stranded(event)
                admission.release(event.chat)
                released += 1
        finally:
            for _, event in admitted[released:]:
                admission.release(event.chat)
        return receipts

    async def _receive_early(self, admitted: Sequence[tuple[int, InboundEvent]], steps: Sequence[Change]) -> list[bool]:
        """Hand the events on before their rows commit, so that each handler's first write (the event marked
        handled) carries its row: one commit instead of two (:meth:`EventLog.receive_held`).  The platform still
        hears "received" only once the rows are durable: this waits for them.

        A handler before that write only reads (:mod:`bot.gateway.stages`); if the row is not stored, neither is
        that write (:class:`~bot.store.base.EventNotStored` stops the handler) and the platform delivers again.
        A redelivery of an event stored before meets its row: the handler's write finds it handled (or pending,
        and handles it)."""
        held = self.store.receive_held
        receipts = [held(event_key(event), step) for (_, event), step in zip(admitted, steps, strict=True)]
        try:
            for _, event in admitted:
                await self._publish(event)
        except BaseException:
            for receipt in receipts:  # committed all the same (a closing store flushes them): not waited for here
                asyncio.ensure_future(receipt).add_done_callback(_quiet)
            raise
        if len(receipts) == 1:
            return [await receipts[0]]
        stored = await asyncio.gather(*receipts, return_exceptions=True)  # every one awaited, whatever fails
        for outcome in stored:
            if isinstance(outcome, BaseException):
                raise outcome
        return [outcome is True for outcome in stored]

    async def publish_stored(self, event: InboundEvent) -> None:
        """Hand on an event whose inbox row the caller committed itself (a job's fire): handled like the others,
        recovered like them after a crash."""
        await self._publish(event)

    @staticmethod
    def _count(metrics: Metrics, event: InboundEvent) -> None:
        """An event is durable: count it, and the time from its receipt to now (when it may be acknowledged)."""
        channel = event.chat.channel
        metrics.child(metrics.received, channel, "action" if isinstance(event, Action) else "message").inc()
        metrics.child(metrics.ack, channel).observe(max(0.0, time.time() - event.received_at.timestamp()))

    async def _publish(self, event: InboundEvent) -> None:
        key = event_key(event)
        if self.handled_here:
            self._inflight.add(key)
        try:
            await self.bus.publish(event)
        except BusClosed as exc:
            self._inflight.discard(key)
            # Committed: the next start's recovery hands it on.
            raise InboxClosed("the gateway is shutting down") from exc
        except BusUnavailable as exc:
            self._inflight.discard(key)
            # Committed but not on the bus: the platform's redelivery (or the sweep) hands it on.
            raise NotStored(str(exc)) from exc
        except BaseException:
            self._inflight.discard(key)
            raise

    async def _retry_if_stranded(self, event: InboundEvent) -> None:
        """A redelivered event whose first handling failed (the database refused its write) is handled now.

        Its row is still pending and nothing here is working on it: the platform's
        redelivery is the retry.  (Rare, so the read costs nothing in the common case.)
        """
        key = event_key(event)
        if key not in self._inflight and await self.store.event_status(key) == "pending":
            log.info("inbox: event %s was stored but not handled; handling it now", key)
            await self._publish(event)

    def tracked(self, handler: Callable[[InboundEvent], Awaitable[None]]) -> Callable[[InboundEvent], Awaitable[None]]:
        """``handler`` (the supervisor's), noting when it is done with each event (see :meth:`_retry_if_stranded`)."""

        async def handle(event: InboundEvent) -> None:
            try:
                await handler(event)
            finally:
                key = event_key(event)
                self._inflight.discard(key)
                self.store.handled_held(key)

        return handle

    # -- life cycle -------------------------------------------------------------------------

    async def recover(self, received_before: datetime | None = None) -> int:
        """Publish the events committed before a crash and not handled, in arrival order (``received_before``:
        only those received before then)."""
        count = 0
        for kind, data in await self.store.pending_events(received_before):
            event: InboundEvent
            try:
                if kind == "action":
                    event = Action.model_validate_json(data)
                else:
                    event = InboundMessage.model_validate_json(data)
            except ValueError as exc:
                log.error("inbox: a stored event cannot be read and is skipped: %s", exc)
                continue
            await self._publish(event)
            count += 1
        self.stats.recovered += count
        if count:
            log.info("inbox: %d events received before a restart are being handled now", count)
        return count

    async def settled(self) -> None:
        """Wait until the notices sent so far went out (for tests and the console)."""
        await self._admission.settled()

    async def close(self, timeout: float = 2.0) -> None:
        """Take nothing new; give notices in flight ``timeout`` seconds."""
        self._closed = True
        await self._admission.close(timeout)


def _quiet(done: asyncio.Future[bool]) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: a failure was reported by the caller's own error
