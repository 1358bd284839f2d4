"""Outbound messages from workers to the gateway that owns the channel.

A worker has no platform connections: its :class:`~bot.delivery.Delivery` sends through a
:class:`RemoteChannel` per channel, which adds the message to the stream ``bot:out:<channel>`` and
waits for the platform's message reference on its reply stream.  Gateways read those streams in the
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
REPLIES_MAXLEN = 10_000
"""Answers kept on a reply stream (its reader is at most one read behind)."""
REPLIES_TTL_MS = 120_000
"""A reply stream nobody reads any more (its worker is gone) goes after this long."""


def outbound_stream(channel: str) -> str:
    return f"{PREFIX}out:{channel}"


@dataclass(slots=True)
class _Out:
    """An outbound entry read from a stream."""

    stream: Any
    entry_id: Any
    fields: dict[Any, Any]


class RemoteChannel:
    """The sending side of a channel whose adapter lives in a gateway process.

    Entries of all chats go to the outbound stream together (:class:`~bot.scale.batched.Batched`: one round trip
    for what is asked meanwhile), and the gateways answer on one reply stream of this channel object, read by
    one task while anybody waits (one round trip for many answers), not a connection blocked per message.
    """

    def __init__(
        self, name: str, redis: Any, *, timeout_s: float = 30.0, maxlen: int = 100_000, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.name = name
        self.redis = redis
        self.timeout_s = timeout_s
        self.maxlen = maxlen
        self.clock = clock
        self.replies = f"{PREFIX}replies:{new_id(16)}"
        """Where the gateways answer this object's requests (``ask`` → the platform's reference)."""
        self._adding: Batched[dict[str, str]] = Batched(redis, self._add, "outbound messages")
        self._waiting: dict[str, asyncio.Future[str | None]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._last: Any = "0-0"

    def _add(self, pipe: Any, fields: dict[str, str]) -> None:
        pipe.xadd(outbound_stream(self.name), fields, maxlen=self.maxlen, approximate=True)

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":  # nothing comes back: no answer to wait for
            await self._adding.call({"message": message.model_dump_json(), "chat": str(message.chat)})
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
        ask = new_id(12)
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._waiting[ask] = answer
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read_answers(), name=f"answers:{self.name}")
        fields = {"message": message.model_dump_json(), "chat": str(message.chat), "reply": self.replies, "ask": ask}
        try:
            await self._adding.call(fields | extra)
            async with asyncio.timeout(self.timeout_s):
                return await answer
        except TimeoutError:
            log.warning(
                "chat %s: no gateway answered for a %s message within %.0f s (is a gateway with %s running?)",
                message.chat,
                message.kind,
                self.timeout_s,
                self.name,
            )
            return None
        finally:
            self._waiting.pop(ask, None)

    async def _read_answers(self) -> None:
        """Hand each answer to its waiter, as long as anybody waits."""
        while self._waiting:
            try:
                replies = await self.redis.xread({self.replies: self._last}, count=500, block=1000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the waiters time out unless it comes back first
                if not self._waiting:
                    return  # nobody to answer (the client closed at shutdown)
                log.warning("relay: reading the gateways' answers failed (retrying): %s", exc)
                await self.clock.sleep(0.5)
                continue
            for _stream, entries in replies or []:
                for entry_id, fields in entries:
                    self._last = entry_id
                    waiter = self._waiting.get(_field(fields, "ask") or "")
                    if waiter is not None and not waiter.done():
                        ref = _field(fields, "ref")
                        waiter.set_result(None if ref in (None, NO_REF) else ref)


def _field(fields: dict[Any, Any], name: str) -> str | None:
    value = fields.get(name.encode(), fields.get(name))
    return None if value is None else text_of(value)


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
        self._room = asyncio.Semaphore(max_pending)
        self._lanes: Lanes[_Out] = Lanes(self._run, self._finished, workers=max_concurrent)
        """A chat's entries one at a time, in stream order; chats side by side (up to ``max_concurrent``)."""
        self._task: asyncio.Task[None] | None = None
        self._answers: Batched[tuple[Any, Any, dict[Any, Any], str | None]] = Batched(
            redis, _add_answer, "answers", _expire_replies
        )
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
        self._lanes.push(_field(fields, "chat") or "", _Out(stream, entry_id, fields))

    async def _run(self, _chat: str, out: _Out) -> None:
        await self._send(out.stream, out.entry_id, out.fields)

    def _finished(self, _out: _Out) -> None:
        self._room.release()

    async def _send(self, stream: Any, entry_id: Any, fields: dict[Any, Any]) -> None:
        try:
            outbox = _field(fields, "outbox")
            try:
                message = OutboundMessage.model_validate_json(_field(fields, "message") or "")
            except ValueError as exc:
                log.error("relay: an outbound entry cannot be read and is dropped: %s", exc)
                ref = None
            else:
                ref = await (
                    self._send_once(int(outbox), message, _field(fields, "interrupt"), _field(fields, "again") == "1")
                    if outbox
                    else self._send_plain(message)
                )
            self._answers.push((stream, entry_id, fields, ref))
        except Exception as exc:
            log.warning("relay: could not finish outbound entry %s: %s", entry_id, exc)


def _add_answer(pipe: Any, item: tuple[Any, Any, dict[Any, Any], str | None]) -> None:
    stream, entry_id, fields, ref = item
    reply, ask = _field(fields, "reply"), _field(fields, "ask")
    if reply is not None and ask is not None:
        pipe.xadd(reply, {"ask": ask, "ref": ref or NO_REF}, maxlen=REPLIES_MAXLEN, approximate=True)
    elif reply is not None:  # a worker of the version before, waiting on a list of its own
        pipe.rpush(reply, ref or NO_REF)
    pipe.xack(stream, GATEWAYS, entry_id)


def _expire_replies(pipe: Any, items: list[tuple[Any, Any, dict[Any, Any], str | None]]) -> None:
    """Each reply stream (or list) a pipeline answered on lives ``REPLIES_TTL_MS`` more: once per pipeline, after
    its answers (a worker's answers of one pipeline all go to its one stream)."""
    for reply in dict.fromkeys(_field(fields, "reply") for _, _, fields, _ in items):
        if reply is not None:
            pipe.pexpire(reply, REPLIES_TTL_MS)
