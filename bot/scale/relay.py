"""Outbound messages from workers to the gateway that owns the channel.

A worker has no platform connections: its :class:`~bot.delivery.Delivery` sends through a
:class:`RemoteChannel` per channel, which adds the message to the stream ``bot:out:<channel>`` and
waits for the platform's message reference on a reply list.  Gateways read those streams in the
consumer group ``gateways`` (:class:`OutboundRelay`), send each message with their own adapters and
answer.  A worker waits for each answer before it sends the chat's next message, so a chat's
messages arrive in order; a typing indicator has no answer to wait for, so it is only added, and the
gateway sends what one read brought of a chat in stream order (the indicator before the reply that ends
it).  An entry is acknowledged after it was sent; one a gateway read and did not acknowledge (it died)
is claimed by another after ``claim_idle_ms``.

What must survive a worker's crash was committed to the outbox first, as in one process: the
worker marks it sent when the reference comes back, and a partition's next owner sends what is
still unmarked.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from bot.aio import cancel_and_wait
from bot.bus import Lanes
from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import OutboundMessage
from bot.ids import new_id
from bot.scale.batched import Batched
from bot.scale.streams import PREFIX, ensure_group, text_of

log = logging.getLogger(__name__)

GATEWAYS = "gateways"
NO_REF = "-"


def outbound_stream(channel: str) -> str:
    return f"{PREFIX}out:{channel}"


@dataclass(slots=True)
class _Out:
    """An outbound entry read from a stream."""

    stream: Any
    entry_id: Any
    fields: dict[Any, Any]


class RemoteChannel:
    """The sending side of a channel whose adapter lives in a gateway process."""

    def __init__(self, name: str, redis: Any, *, timeout_s: float = 30.0, maxlen: int = 100_000) -> None:
        self.name = name
        self.redis = redis
        self.timeout_s = timeout_s
        self.maxlen = maxlen

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":  # nothing comes back: no round trip to wait for
            fields = {"message": message.model_dump_json(), "chat": str(message.chat)}
            await self.redis.xadd(outbound_stream(self.name), fields, maxlen=self.maxlen, approximate=True)
            return None
        return await self._ask(message, {})

    async def deliver(
        self, outbox_id: int, message: OutboundMessage, interrupt_id: str | None, *, again: bool = False
    ) -> str | None:
        """Send a committed outbox entry; the gateway marks it sent before it answers (and, ``again``, checks
        first that nobody sent it meanwhile: a recovery's resend)."""
        fields = {"outbox": str(outbox_id)}
        if again:
            fields["again"] = "1"
        if interrupt_id is not None:
            fields["interrupt"] = interrupt_id
        return await self._ask(message, fields)

    async def _ask(self, message: OutboundMessage, extra: dict[str, str]) -> str | None:
        reply = f"{PREFIX}reply:{new_id(16)}"
        fields = {"message": message.model_dump_json(), "chat": str(message.chat), "reply": reply, **extra}
        # One round trip: the wait for the answer follows the entry in the same pipeline (the server runs them
        # in order; the client's read timeout is longer than the wait).
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(outbound_stream(self.name), fields, maxlen=self.maxlen, approximate=True)
            pipe.blpop([reply], timeout=self.timeout_s)
            _, answer = await pipe.execute()
        if answer is None:
            log.warning(
                "chat %s: no gateway answered for a %s message within %.0f s (is a gateway with %s running?)",
                message.chat,
                message.kind,
                self.timeout_s,
                self.name,
            )
            return None
        ref = text_of(answer[1])
        return None if ref == NO_REF else ref


class OutboundRelay:
    """A gateway's reader of the outbound streams of the channels it serves."""

    def __init__(
        self,
        redis: Any,
        delivery: Any,
        marks: Any,
        channels: list[str],
        *,
        name: str,
        max_concurrent: int = 64,
        max_pending: int = 10_000,
        claim_idle_ms: int = 30_000,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.redis = redis
        self.clock = clock
        self.delivery = delivery
        self.marks = marks
        """The :class:`~bot.store.runs.RunStore`: outbox entries are marked sent here, then the worker hears."""
        self.channels = channels
        self._marking: set[int] = set()
        """Outbox entries being sent now (a second request for one, after a worker's crash, is skipped)."""
        self.name = name
        self.claim_idle_ms = claim_idle_ms
        self._cap = asyncio.Semaphore(max_concurrent)
        self._room = asyncio.Semaphore(max_pending)
        self._lanes: Lanes[_Out] = Lanes(self._run, self._finished)
        """A chat's entries one at a time, in stream order; chats side by side (up to ``max_concurrent``)."""
        self._task: asyncio.Task[None] | None = None
        self._answers: Batched[tuple[Any, Any, str | None, str | None]] = Batched(redis, _add_answer, "answers")
        """Each entry's answer to its worker and acknowledgement, with whatever else finished meanwhile."""

    async def start(self) -> None:
        if not self.channels:
            return
        for channel in self.channels:
            await ensure_group(self.redis, outbound_stream(channel), GATEWAYS)
        self._task = asyncio.create_task(self._loop(), name="outbound-relay")

    async def stop(self, timeout: float = 5.0) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        await self._lanes.join(timeout)
        await self._answers.flushed()

    async def _loop(self) -> None:
        streams = {outbound_stream(c): ">" for c in self.channels}
        rounds = 0
        while True:
            try:
                if rounds % 50 == 0:
                    await self._claim_stale()
                rounds += 1
                replies = await self.redis.xreadgroup(GATEWAYS, self.name, streams, count=100, block=1000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("relay: reading the outbound streams failed (retrying): %s", exc)
                await self.clock.sleep(1.0)
                continue
            for stream, entries in replies or []:
                for entry_id, fields in entries:
                    await self._push(stream, entry_id, fields)

    async def _send_plain(self, message: OutboundMessage) -> str | None:
        ref: str | None = await self.delivery.send(message)
        return ref

    async def _send_once(
        self, outbox_id: int, message: OutboundMessage, interrupt_id: str | None, again: bool
    ) -> str | None:
        """A committed outbox entry: sent unless it was sent already, and marked sent before the worker hears.
        Only a recovery's resend (``again``) reads the outbox first: a first send cannot have been sent before
        (that read was a round trip per reply)."""
        if outbox_id in self._marking or (again and not await self.marks.is_unsent(outbox_id)):
            return None  # a worker's crash made its next owner ask again: sent once already
        self._marking.add(outbox_id)
        try:
            ref = await self._send_plain(message)
            await self.marks.sent(outbox_id, ref, interrupt_id, wait=True)
            return ref
        finally:
            self._marking.discard(outbox_id)

    async def _claim_stale(self) -> None:
        """Entries another gateway read and never acknowledged (it died) are sent from here."""
        for channel in self.channels:
            stream = outbound_stream(channel)
            reply = await self.redis.xautoclaim(
                stream, GATEWAYS, self.name, min_idle_time=self.claim_idle_ms, start_id="0-0", count=100
            )
            for entry_id, fields in reply[1]:
                if fields:
                    await self._push(stream, entry_id, fields)

    async def _push(self, stream: Any, entry_id: Any, fields: dict[Any, Any]) -> None:
        await self._room.acquire()
        chat = fields.get(b"chat", fields.get("chat"))
        self._lanes.push(text_of(chat) if chat is not None else "", _Out(stream, entry_id, fields))

    async def _run(self, _chat: str, out: _Out) -> None:
        async with self._cap:
            await self._send(out.stream, out.entry_id, out.fields)

    def _finished(self, _out: _Out) -> None:
        self._room.release()

    async def _send(self, stream: Any, entry_id: Any, fields: dict[Any, Any]) -> None:
        def field(name: str) -> str | None:
            value = fields.get(name.encode(), fields.get(name))
            return None if value is None else text_of(value)

        try:
            reply = field("reply")
            outbox = field("outbox")
            try:
                message = OutboundMessage.model_validate_json(field("message") or "")
            except ValueError as exc:
                log.error("relay: an outbound entry cannot be read and is dropped: %s", exc)
                ref = None
            else:
                ref = await (
                    self._send_once(int(outbox), message, field("interrupt"), field("again") == "1")
                    if outbox
                    else self._send_plain(message)
                )
            self._answers.push((stream, entry_id, reply, ref))
        except Exception as exc:
            log.warning("relay: could not finish outbound entry %s: %s", entry_id, exc)


def _add_answer(pipe: Any, item: tuple[Any, Any, str | None, str | None]) -> None:
    stream, entry_id, reply, ref = item
    if reply is not None:
        pipe.rpush(reply, ref or NO_REF)
        pipe.pexpire(reply, 120_000)
    pipe.xack(stream, GATEWAYS, entry_id)
