"""The durable intake: the one door every inbound event comes through.

**Acknowledge only what is durable.**  :meth:`DurableInbox.submit` returns after the
event is committed (an ``inbox`` row, de-duplicated by its platform id); only then
may an adapter tell its platform "received" (advance Telegram's offset, answer a
webhook or Slack request with 200, ack a Socket Mode envelope).  A commit that
fails, or a closing inbox, raises :class:`~bot.inbox.NotStored`: the adapter then
does not acknowledge, and the platform delivers again.  Committed events go on the bus; the supervisor marks each one
handled in the same transaction as what it did, and recovery publishes the rows
left pending by a crash, in arrival order.

**Fair and bounded.**  Before anything is stored, cheap checks that cost no store
write decide what a sender or chat may have:

- bots are ignored; an unknown sender who addressed the bot gets at most one answer
  per ``limits.unknown_sender_reply_s`` (a pairing code in a direct chat, see
  :mod:`bot.pairing`; else their id) and nothing of the message is stored (a sender
  let in by pairing is asked of the pairing, a read);
- a sender over the token bucket (``limits.sender_rate_per_min``, burst
  ``limits.sender_burst``; admins exempt) hears it once per ``notice_interval_s``
  and is dropped silently until the bucket refills;
- a text over ``limits.max_text_chars`` is refused with a "too long" notice;
- a chat with ``limits.chat_queue_notice`` events waiting gets one "slow down"
  notice; at ``limits.chat_queue_max`` its newest messages are refused with a
  notice instead of queued, so one flooding chat never blocks the others.

Commands (``/cancel`` must get through a flooded chat) and button presses skip the
chat bound.  Notices are best effort, sent off the intake's path.

**A fault is not a flood.**  The sender's token is taken when an event is admitted and
given back when its commit fails (or when it turns out to be stored already): the
platform's redeliveries of an event the database would not take (a full disk) cost the
sender nothing.  Such an event is remembered (by its platform id, for
:data:`_UNSTORED_KEEP_S`), and when it comes again it is never refused as "too fast":
the platform must hear "received" only for what is stored, or what the sender was told
was refused when it first arrived.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.access import AccessPolicy
from bot.bus import Bus, BusClosed, BusUnavailable
from bot.config.settings import ChannelSection, LimitsSection
from bot.events import Action, ChatKey, InboundEvent, InboundMessage, OutboundMessage, event_key
from bot.inbox import InboxClosed, NotStored, Receipt
from bot.limits import TokenBuckets
from bot.ops.metrics import Metrics
from bot.store.base import EventLog, StoreError
from bot.store.values import Change

log = logging.getLogger(__name__)

Notify = Callable[[OutboundMessage], Awaitable[object]]

_KEEP = 10_000
"""Senders and chats whose limits are remembered (the least recently seen go first)."""
_MAX_NOTICES = 256
"""Notices in flight at once; past it, more are skipped (they are best effort)."""
_UNSTORED_KEEP_S = 24 * 3600.0
"""How long an event whose commit failed is remembered (Telegram keeps undelivered updates for 24 hours)."""


@dataclass
class InboxStats:
    """Counters for the health endpoint, tests and benchmarks."""

    accepted: int = 0
    duplicates: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    ignored: int = 0
    recovered: int = 0

    def refuse(self, reason: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1


class _Recent(OrderedDict[str, float]):
    """Timestamps of the last notice per key, bounded by count."""

    def due(self, key: str, now: float, interval: float) -> bool:
        """Whether ``key`` may be told again (and if so, remember that it is told now)."""
        last = self.get(key)
        if last is not None and now - last < interval:
            return False
        self[key] = now
        self.move_to_end(key)
        while len(self) > _KEEP:
            self.popitem(last=False)
        return True


class _Unstored(OrderedDict[str, float]):
    """Keys of events whose commit failed, with when it last failed; bounded by count and age."""

    def note(self, key: str, now: float) -> None:
        self[key] = now
        self.move_to_end(key)
        while len(self) > _KEEP:
            self.popitem(last=False)

    def seen(self, key: str, now: float) -> bool:
        failed = self.get(key)
        if failed is None:
            return False
        if now - failed > _UNSTORED_KEEP_S:
            del self[key]
            return False
        return True


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
        self._notify = notify
        self._clock = clock
        self._buckets = TokenBuckets(limits.sender_rate_per_min / 60.0, limits.sender_burst, max_keys=_KEEP)
        self._told: _Recent = _Recent()
        """When each sender or chat was last told about a limit (keys prefixed by the kind of notice)."""
        self._slowed: set[str] = set()
        """Chats told to slow down, until their queue is short again."""
        self._reserved: dict[ChatKey, int] = {}
        """Events per chat admitted and not yet on the bus (being committed)."""
        self._notices: set[asyncio.Task[None]] = set()
        self._inflight: set[str] = set()
        """Keys of events on the bus and not handled yet (a redelivery of one of them is a plain duplicate)."""
        self._unstored = _Unstored()
        """Events admitted whose commit failed: their redeliveries are not refused as "too fast"."""
        self._closed = False
        self.stats = InboxStats()

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
        admitted: list[tuple[int, InboundEvent]] = []
        charged: list[str | None] = []
        """Per admitted event: the sender whose token it took."""
        for event in events:
            receipt, charge = await self._admit(event)
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
                self._release(event.chat)
                self._unstored.note(event_key(event), now)
                if charge is not None:
                    self._buckets.give_back(charge)  # the platform delivers it again: one token when it is stored
            raise NotStored(f"the inbound events were not stored: {exc}") from exc
        except BaseException:
            for _, event in admitted:
                self._release(event.chat)
            raise
        released = 0
        try:
            for (index, event), new, charge in zip(admitted, stored, charged, strict=True):
                self._unstored.pop(event_key(event), None)
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
                        self._buckets.give_back(charge)  # it took its token when it was stored
                    if not early:  # else it is on the bus already: its handler finds it handled, or handles it
                        await self._retry_if_stranded(event)
                self._release(event.chat)
                released += 1
        finally:
            for _, event in admitted[released:]:
                self._release(event.chat)
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

    async def _admit(self, event: InboundEvent) -> tuple[Receipt, str | None]:
        """The cheap checks (no store write): accept, or refuse/ignore and say so when useful; and the sender
        whose token the event took (given back if it is not stored)."""
        charge: str | None = None
        config = self.access.section(event.chat.channel)
        sender = event.sender
        if sender.is_bot:
            return self._ignore(), None
        if not await self.access.allows_event(event):
            if isinstance(event, InboundMessage):
                self._refuse_stranger(event, config)
                return Receipt.REFUSED, None
            return self._ignore(), None  # the adapter's press check already told them
        if isinstance(event, Action):
            return self._reserve(event), None
        if not event.text.strip() and not event.attachments:
            return self._ignore(), None
        now = self._clock()
        sender_key = f"{event.chat.channel}:{sender.id}"
        limited = self.limits.sender_rate_per_min > 0 and not config.is_admin(sender.id)  # type: ignore[union-attr]
        if limited and self._buckets.take(sender_key, now):
            charge = sender_key
        elif limited and self._unstored.seen(event_key(event), now):
            pass  # admitted before the database failed it: refusing it now would drop a message we took
        elif limited:
            self.stats.refuse("rate")
            if self._told.due("rate:" + sender_key, now, self.limits.notice_interval_s):
                per_min = f"{self.limits.sender_rate_per_min:g}"
                self._tell(
                    event,
                    f"⏳ You are sending messages faster than I can take them (about {per_min} a minute); "
                    "I am skipping new ones for a moment. Please wait for my answers.",
                )
            return Receipt.REFUSED, None
        if len(event.text) > self.limits.max_text_chars:
            self.stats.refuse("too_long")
            self._tell(
                event,
                f"⚠️ Your message is too long ({len(event.text):,} characters; I take at most "
                f"{self.limits.max_text_chars:,}). Please send a shorter one.",
            )
            return Receipt.REFUSED, None
        if event.text.startswith("/"):
            return self._reserve(event), charge  # commands get through a flooded chat (/cancel)
        chat = str(event.chat)
        waiting = await self.bus.queued(chat) + self._reserved.get(event.chat, 0)
        if waiting >= self.limits.chat_queue_max:
            self.stats.refuse("chat_full")
            if self._told.due("full:" + chat, now, self.limits.notice_interval_s):
                self._tell(
                    event,
                    f"⚠️ {waiting} messages are already waiting here, so I did not take your latest one. "
                    "Please wait for my answers, then send it again.",
                )
            return Receipt.REFUSED, None
        if waiting < self.limits.chat_queue_notice:
            self._slowed.discard(chat)
        elif chat not in self._slowed:
            self._slowed.add(chat)
            if len(self._slowed) > _KEEP:
                self._slowed.clear()
            self._tell(event, f"🐢 Slow down: {waiting} messages are waiting; I answer them in order.")
        return self._reserve(event), charge

    def _reserve(self, event: InboundEvent) -> Receipt:
        chat = event.chat
        self._reserved[chat] = self._reserved.get(chat, 0) + 1
        return Receipt.ACCEPTED

    def _release(self, chat: ChatKey) -> None:
        left = self._reserved.get(chat, 0) - 1
        if left > 0:
            self._reserved[chat] = left
        else:
            self._reserved.pop(chat, None)

    def _ignore(self) -> Receipt:
        self.stats.ignored += 1
        return Receipt.IGNORED

    def _refuse_stranger(self, event: InboundMessage, config: ChannelSection | None) -> None:
        self.stats.refuse("unknown_sender")
        if config is None or config.unknown_senders == "ignore":
            return
        # Only when the bot was addressed: in a busy group, strangers' chatter gets no answer.
        if not (event.is_direct or event.mentions_bot or config.mention_policy != "mention"):
            return
        key = f"stranger:{event.chat.channel}:{event.sender.id}"
        if not self._told.due(key, self._clock(), self.limits.unknown_sender_reply_s):
            return
        if config.unknown_senders == "pair" and self.pairing is not None:
            if event.is_direct:
                self._tell_later(event, self.pairing.offer(event))  # a write: off the intake's path
                return
            self._tell(
                event,
                f"I don't know you yet: write to me directly for a code an admin can let you in with "
                f"(your user id is {event.sender.id}).",
            )
            return
        self._tell(
            event,
            f"Sorry, I only talk to approved users. Your user id is {event.sender.id}; "
            "ask the operator to add it to allow_from.",
        )

    def _tell(self, event: InboundEvent, text: str) -> None:
        """Send a notice off the intake's path (best effort: it never delays an acknowledgement)."""
        self._tell_later(event, _ready(text))

    def _tell_later(self, event: InboundEvent, text: Awaitable[str]) -> None:
        """Send the notice ``text`` makes, off the intake's path."""
        if len(self._notices) >= _MAX_NOTICES:
            log.warning("inbox: too many notices in flight; skipped one for %s", event.chat)
            if asyncio.iscoroutine(text):
                text.close()
            return
        task = asyncio.ensure_future(self._send(event.chat, text))
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    async def _send(self, chat: ChatKey, text: Awaitable[str]) -> None:
        try:
            await self._notify(OutboundMessage(chat=chat, text=await text, kind="notice"))
        except Exception as exc:
            log.warning("inbox: could not send a notice to %s: %s", chat, exc)

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
        while self._notices:
            await asyncio.wait(set(self._notices))

    async def close(self, timeout: float = 2.0) -> None:
        """Take nothing new; give notices in flight ``timeout`` seconds."""
        self._closed = True
        if self._notices:
            await asyncio.wait(set(self._notices), timeout=timeout)


def _quiet(done: asyncio.Future[bool]) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: a failure was reported by the caller's own error


async def _ready(text: str) -> str:
    return text
