"""Delivery: the one way anything reaches a channel.

Everything the bot says passes here: replies, prompts, notices, typing, edits.  A message that must
survive a crash was committed to the ``outbox`` table in the same transaction as the state change
that produced it (a run's end, a pause, a scheduled message falling due); :meth:`Delivery.deliver`
then sends it and marks it sent (commit → send → mark).  What is not committed (typing, notices)
goes through :meth:`Delivery.send`.  Known secret values are replaced by ``***`` first, and a
failing adapter never raises into the caller: the failure is logged and ``None`` returned.

An entry sent and not yet marked when the process dies is sent again at the next start: the platform
got it, and the bot cannot know.  Where the platform drops a resend by the message's idempotency key
(Discord's nonce) that costs nothing; elsewhere (Telegram, Slack) it is a reply seen twice.  So on
those channels committed entries are handed over one at a time (:class:`InDoubt`), each marked before
the next goes (a line in the SQLite database's sent journal, else a commit): a crash doubles at most
one entry per channel, the one on its way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

from bot import fencing
from bot.clock import SYSTEM_CLOCK, Clock, SameDelay, Timer
from bot.events import OutboundMessage
from bot.store.base import StoreError

if TYPE_CHECKING:
    from bot.store.rows import InterruptRow

log = logging.getLogger(__name__)


class ChannelOut(Protocol):
    """The sending side of a channel adapter.

    An adapter whose platform turns two sends with one :attr:`OutboundMessage.key` into one message (Discord's
    nonce) says so with a true ``dedupes_by_key`` attribute: its committed entries then go out side by side.
    """

    name: str

    async def send(self, message: OutboundMessage) -> str | None: ...


@runtime_checkable
class MarksSent(Protocol):
    """A channel that sends a committed outbox entry and marks it sent itself, where the platform connection
    is (a worker's way out through a gateway: :class:`~bot.scale.relay.RemoteChannel`)."""

    async def deliver(
        self, outbox_id: int, message: OutboundMessage, interrupt_id: str | None, *, again: bool = False
    ) -> str | None:
        """``again``: a recovery's resend (it may have gone out already: the sender checks the outbox first)."""
        ...


class DeliveryCounts(Protocol):
    """Where deliveries are counted (the gateway's metrics)."""

    def delivered(self, channel: str, kind: str, *, failed: bool = False) -> None: ...


class SentMarks(Protocol):
    """Where a committed outbox entry is marked sent (with the platform's reference)."""

    async def sent(
        self, outbox_id: int, ref: str | None, interrupt: InterruptRow | str | None = None, *, wait: bool = False
    ) -> None:
        """Returns once a crash of this process would not send the entry again (``wait``: once it is committed)."""


STALL_S = 1.0
"""A committed entry still being sent after this long (a flood wait, its chat's pacing, a slow network) no longer
holds up its channel's next one (which may then be in doubt beside it)."""


class InDoubt:
    """Per channel, at most ``limit`` (1) committed entries between "handed to the adapter" and "marked sent".

    A :meth:`turn` is taken before the send and given back once the mark is safe (:meth:`SentMarks.sent`), so at
    a crash at most ``limit`` entries of the channel may have reached the platform unmarked.  The price: a
    channel hands over its committed entries at most ``limit`` per round trip to the platform; typing, notices
    and edits do not wait.  A send that takes longer than ``stall_s`` gives its turn up early, so one chat
    waiting for flood control never holds up the others for longer than that.
    """

    def __init__(self, limit: int = 1, stall_s: float = STALL_S, clock: Clock = SYSTEM_CLOCK) -> None:
        self.limit = max(1, limit)
        self.stall_s = stall_s
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._stalls = SameDelay(clock, stall_s)
        """Every turn's stall timer waits the same ``stall_s``: one clock timer serves them (a loop timer per send
        was a push into and a pop out of the loop's heap)."""

    def turn(self, channel: str) -> SendSlot:
        """``async with in_doubt.turn(channel) as turn``: the channel's next turn (released at the block's end)."""
        gate = self._gates.get(channel)
        if gate is None:
            gate = self._gates[channel] = asyncio.Semaphore(self.limit)
        return SendSlot(gate, self._stalls)


class SendSlot:
    """One entry's turn on its channel (see :class:`InDoubt`); an async context manager (a class: a generator-based
    one costs several µs more per committed message)."""

    def __init__(self, gate: asyncio.Semaphore, stalls: SameDelay) -> None:
        self._gate = gate
        self._stalls = stalls
        self._released = False
        self._stall: Timer | None = None

    async def __aenter__(self) -> SendSlot:
        await self._gate.acquire()
        self._stall = self._stalls.call_later(self.release)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def sent(self) -> None:
        """The send returned: from now on only the mark stands between this entry and the next."""
        if self._stall is not None:
            self._stall.cancel()

    def release(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
        if not self._released:
            self._released = True
            self._gate.release()


class Delivery:
    """Routes each :class:`OutboundMessage` to the adapter named by its chat key."""

    def __init__(
        self,
        secrets: Iterable[str] = (),
        marks: SentMarks | None = None,
        metrics: DeliveryCounts | None = None,
        *,
        in_doubt: int = 1,
        stall_s: float = STALL_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._channels: dict[str, ChannelOut] = {}
        self._remote: set[str] = set()
        """Channels that mark what they deliver themselves (:class:`MarksSent`): asked once, at registration (an
        ``isinstance`` against a runtime protocol walks the class's attributes; measured: see bench/README.md,
        "Per-message micro-optimisations")."""
        self._metrics = metrics
        self._secrets = tuple(sorted({v for v in secrets if len(v) >= 8}, key=len, reverse=True))
        self._marks = marks
        self.in_doubt = InDoubt(in_doubt, stall_s, clock)
        """Also for whoever sends and marks committed entries itself (a gateway relaying for workers)."""

    def register(self, channel: ChannelOut) -> None:
        self._channels[channel.name] = channel
        if isinstance(channel, MarksSent):
            self._remote.add(channel.name)
        else:
            self._remote.discard(channel.name)

    async def send(self, message: OutboundMessage) -> str | None:
        """Send; the platform's message reference, or None (typing, no reference, or a failure, logged).

        Inside a partition's work whose lease is known lost: :class:`~bot.fencing.LeaseLost`, nothing sent.
        """
        fencing.check(f"a {message.kind} message")
        channel = self._channels.get(message.chat.channel)
        if channel is None:
            log.error(
                "chat %s: no channel adapter for %r; a %s message was dropped",
                message.chat,
                message.chat.channel,
                message.kind,
            )
            return None
        try:
            ref = await channel.send(self._scrubbed(message))
        except Exception:
            log.exception("chat %s: could not deliver a %s message", message.chat, message.kind)
            self._count(message, failed=True)
            return None
        self._count(message)
        return ref

    def _count(self, message: OutboundMessage, *, failed: bool = False) -> None:
        metrics = self._metrics
        if metrics is None or message.kind == "typing":
            return
        metrics.delivered(message.chat.channel, message.kind, failed=failed)

    def _scrubbed(self, message: OutboundMessage) -> OutboundMessage:
        text = message.text
        if any(secret in text for secret in self._secrets):
            for secret in self._secrets:
                text = text.replace(secret, "***")
            message = message.model_copy(update={"text": text})
        return message

    async def deliver(
        self,
        outbox_id: int,
        message: OutboundMessage,
        interrupt: InterruptRow | str | None = None,
        *,
        again: bool = False,
    ) -> str | None:
        """Send a committed outbox entry, then mark it sent (a prompt's reference lands on ``interrupt``);
        ``again``: recovery sends an entry found unsent (a remote sender checks that it still is).

        On a channel without de-duplication by key this waits for the channel's turn and returns once the mark
        is safe from a crash (see :class:`InDoubt`).  Inside a partition's work whose lease is known lost:
        :class:`~bot.fencing.LeaseLost`; the entry stays unsent for the partition's next owner to send.
        """
        fencing.check(f"a committed {message.kind} message")
        channel = self._channels.get(message.chat.channel)
        if channel is not None and channel.name in self._remote:
            remote = cast(MarksSent, channel)  # known since registration
            interrupt_id = interrupt if interrupt is None or isinstance(interrupt, str) else interrupt.id
            try:
                ref = await remote.deliver(outbox_id, self._scrubbed(message), interrupt_id, again=again)
            except Exception:
                log.exception("chat %s: could not deliver a %s message", message.chat, message.kind)
                self._count(message, failed=True)
                return None
            self._count(message)
            if interrupt is not None and not isinstance(interrupt, str):
                interrupt.prompt_ref = ref  # the cached row learns what the database has now
            return ref
        marks = self._marks
        if marks is None:
            return await self.send(message)
        if channel is None or (message.key is not None and getattr(channel, "dedupes_by_key", False)):
            # Nowhere to send it, or the platform drops a resend with this key: no turn to wait for.
            ref = await self.send(message)
            await marks.sent(outbox_id, ref, interrupt)
            return ref
        async with self.in_doubt.turn(channel.name) as turn:
            ref = await self.send(message)
            turn.sent()
            try:
                await marks.sent(outbox_id, ref, interrupt)
            except StoreError as exc:
                log.error(
                    "chat %s: a %s message was sent but could not be marked sent (%s); the next start sends it again",
                    message.chat,
                    message.kind,
                    exc,
                )
        return ref
