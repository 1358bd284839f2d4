"""The intake's admission: the cheap checks, with no store write, that decide what a sender or chat may have
before :class:`~bot.gateway.intake.DurableInbox` stores anything, and the notices that say so.

**Fair and bounded.**

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
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.access import AccessPolicy
from bot.bus import Bus
from bot.config.settings import ChannelSection, LimitsSection
from bot.events import Action, ChatKey, InboundEvent, InboundMessage, OutboundMessage, event_key
from bot.inbox import Receipt
from bot.limits import TokenBuckets

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


class Admission:
    """Per sender and per chat: the token buckets, the notices told, the chats slowed, the events reserved (admitted
    and not yet on the bus) and the events whose commit failed; and the notices in flight."""

    def __init__(
        self,
        *,
        access: AccessPolicy,
        limits: LimitsSection,
        bus: Bus,
        notify: Notify,
        clock: Callable[[], float],
        stats: InboxStats,
    ) -> None:
        self.access = access
        self.pairing = access.pairing
        self.limits = limits
        self.stats = stats
        self._bus = bus
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
        self._unstored = _Unstored()
        """Events admitted whose commit failed: their redeliveries are not refused as "too fast"."""

    async def admit(self, event: InboundEvent) -> tuple[Receipt, str | None]:
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
        waiting = await self._bus.queued(chat) + self._reserved.get(event.chat, 0)
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

    def not_stored(self, event: InboundEvent, charge: str | None, now: float) -> None:
        """``event``'s commit failed: remembered, and its token given back (the platform delivers it again: one
        token when it is stored)."""
        self.release(event.chat)
        self._unstored.note(event_key(event), now)
        if charge is not None:
            self._buckets.give_back(charge)

    def stored(self, event: InboundEvent) -> None:
        """``event``'s row is committed (no longer remembered as failed)."""
        self._unstored.pop(event_key(event), None)

    def give_back(self, charge: str) -> None:
        """The token an event took, for an event stored before (it took its token then)."""
        self._buckets.give_back(charge)

    def _reserve(self, event: InboundEvent) -> Receipt:
        chat = event.chat
        self._reserved[chat] = self._reserved.get(chat, 0) + 1
        return Receipt.ACCEPTED

    def release(self, chat: ChatKey) -> None:
        """An admitted event of ``chat`` is on the bus, or not stored: no longer counted as waiting."""
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

    # -- notices ------------------------------------------------------------------------------

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

    async def settled(self) -> None:
        """Wait until the notices sent so far went out."""
        while self._notices:
            await asyncio.wait(set(self._notices))

    async def close(self, timeout: float) -> None:
        """Give notices in flight ``timeout`` seconds."""
        if self._notices:
            await asyncio.wait(set(self._notices), timeout=timeout)


async def _ready(text: str) -> str:
    return text
