"""Delivery: the one way anything reaches a channel.

Everything the bot says passes here: replies, prompts, notices, typing, edits.  A message that must
survive a crash was committed to the ``outbox`` table in the same transaction as the state change
that produced it (a run's end, a pause, a scheduled message falling due); :meth:`Delivery.deliver`
then sends it and marks it sent (commit → send → mark).  What is not committed (typing, notices)
goes through :meth:`Delivery.send`.  Known secret values are replaced by ``***`` first, and a
failing adapter never raises into the caller: the failure is logged and ``None`` returned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot import fencing
from bot.events import OutboundMessage
from bot.ops.metrics import Metrics

if TYPE_CHECKING:
    from bot.store.runs import InterruptRow

log = logging.getLogger(__name__)


class ChannelOut(Protocol):
    """The sending side of a channel adapter."""

    name: str

    async def send(self, message: OutboundMessage) -> str | None: ...


@runtime_checkable
class MarksSent(Protocol):
    """A channel that sends a committed outbox entry and marks it sent itself, where the platform connection
    is (a worker's way out through a gateway: :class:`~bot.scale.relay.RemoteChannel`)."""

    async def deliver(self, outbox_id: int, message: OutboundMessage, interrupt_id: str | None) -> str | None: ...


class SentMarks(Protocol):
    """Where a committed outbox entry is marked sent (with the platform's reference)."""

    async def sent(self, outbox_id: int, ref: str | None, interrupt: InterruptRow | str | None = None) -> None: ...


class Delivery:
    """Routes each :class:`OutboundMessage` to the adapter named by its chat key."""

    def __init__(
        self, secrets: Iterable[str] = (), marks: SentMarks | None = None, metrics: Metrics | None = None
    ) -> None:
        self._channels: dict[str, ChannelOut] = {}
        self._metrics = metrics
        self._secrets = tuple(sorted({v for v in secrets if len(v) >= 8}, key=len, reverse=True))
        self._marks = marks

    def register(self, channel: ChannelOut) -> None:
        self._channels[channel.name] = channel

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
        if failed:
            metrics.send_failures.labels(message.chat.channel).inc()
        else:
            metrics.sent.labels(message.chat.channel, message.kind).inc()

    def _scrubbed(self, message: OutboundMessage) -> OutboundMessage:
        text = message.text
        if any(secret in text for secret in self._secrets):
            for secret in self._secrets:
                text = text.replace(secret, "***")
            message = message.model_copy(update={"text": text})
        return message

    async def deliver(
        self, outbox_id: int, message: OutboundMessage, interrupt: InterruptRow | str | None = None
    ) -> str | None:
        """Send a committed outbox entry, then mark it sent (a prompt's reference lands on ``interrupt``).

        Inside a partition's work whose lease is known lost: :class:`~bot.fencing.LeaseLost`; the entry stays
        unsent for the partition's next owner to send.
        """
        fencing.check(f"a committed {message.kind} message")
        channel = self._channels.get(message.chat.channel)
        if isinstance(channel, MarksSent):
            interrupt_id = interrupt if interrupt is None or isinstance(interrupt, str) else interrupt.id
            try:
                ref = await channel.deliver(outbox_id, self._scrubbed(message), interrupt_id)
            except Exception:
                log.exception("chat %s: could not deliver a %s message", message.chat, message.kind)
                self._count(message, failed=True)
                return None
            self._count(message)
            if interrupt is not None and not isinstance(interrupt, str):
                interrupt.prompt_ref = ref  # the cached row learns what the database has now
            return ref
        ref = await self.send(message)
        if self._marks is not None:
            await self._marks.sent(outbox_id, ref, interrupt)
        return ref
