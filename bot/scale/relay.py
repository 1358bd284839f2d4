"""Outbound messages from workers to the gateway that owns the channel.

A worker has no platform connections: its :class:`~bot.delivery.Delivery` sends through a
:class:`RemoteChannel` per channel, which adds the message to the stream ``bot:out:<channel>`` and
waits for the platform's message reference on its reply stream.  Gateways read those streams in the
consumer group ``gateways`` (:class:`OutboundRelay`), send each message with their own adapters and
answer.  A worker waits for each answer before it sends the chat's next message, so a chat's
messages arrive in order; a typing indicator has no answer to wait for, so it is only added, and the
gateway sends what one read brought of a chat in stream order (the indicator before the reply that ends
it).

What must survive a worker's crash was committed to the outbox first, as in one process: the gateway
marks it sent before it answers, and a partition's next owner sends what is still unmarked.

**A gateway's death.**  Why every entry is sent, a killed gateway's waiters are answered within seconds of its
death, and a reply is doubled at most once per chat that had one in flight:

1. *Nothing is lost.*  An entry stays in its stream, pending with the consumer that read it, until that consumer
   acknowledges it, which it does only once the entry was sent (and, from the outbox, marked sent), in one
   ``MULTI``/``EXEC`` with the answer to its worker: the worker hears if and only if the entry is done.
2. *A dead reader's entries are taken over at once.*  A relay reads as ``<process>.<epoch>`` and keeps a liveness
   key with a short TTL (:mod:`bot.scale.liveness`: 3 s, renewed every 0.75 s).  Every relay looks for dead
   consumers when it starts and at each renewal, and claims their pending entries (``XCLAIM`` with a minimum idle
   time of a TTL: of two gateways claiming together, one gets each entry).  So a SIGKILLed gateway's entries are
   sent by the next gateway as soon as it is up, or at most a TTL and a renewal after the death if one was up
   already; their workers, still waiting on their reply streams, are answered then (they need not notice the
   death: their 30 s timeout is for a bus with no gateway at all).
3. *At most one in doubt per chat.*  A relay runs a chat's entries one at a time in stream order and starts the
   next only after the previous one's answer and acknowledgement are in Redis (``_answer`` waits for them).  Of a
   dead consumer's pending entries, per chat, only the oldest can have been started; the others were never sent.
4. *In doubt is checked where it can be.*  A taken-over entry from the outbox is sent only if it is still in the
   outbox (else answered with the stored reference); a typing indicator is dropped (stale); a plain message is sent
   again.  So the one entry per chat that was on its way when the gateway died is doubled only when it reached the
   platform and its mark (or, plain, its acknowledgement) did not land: at most one doubled reply per chat in
   flight, none where the mark landed.
5. *A stalled gateway is not two gateways.*  A relay sends an entry only while its own clock says its key is held
   (``Liveness.until``) and only if it was read under its current epoch; past that it sends nothing more of it and
   starts a new epoch, so what the old one read is taken over (by another gateway, or by itself) under rule 4.  A
   send already under way when the stall began is that chat's one entry in doubt.
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
from bot.scale.liveness import ALIVE_TTL_MS, Liveness, alive_key
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


ANSWER_TRIES = 5
"""Times an answer (and acknowledgement) is tried before the chat's next entry goes all the same."""
TAKE_OVER_COUNT = 500


@dataclass(slots=True)
class _Out:
    """An outbound entry read from a stream."""

    stream: Any
    entry_id: Any
    fields: dict[Any, Any]
    consumer: str
    """The consumer name it was read (or claimed) under: sent only while that name is this relay's and alive."""
    doubt: bool = False
    """Taken over from a dead consumer (or claimed as stale): it may have been sent already."""


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


def _refused(exc: BaseException) -> bool:
    """Whether Redis refused a command (trying again changes nothing), rather than being out of reach."""
    return any(c.__name__ == "ResponseError" for c in type(exc).__mro__)


def _field(fields: dict[Any, Any], name: str) -> str | None:
    value = fields.get(name.encode(), fields.get(name))
    return None if value is None else text_of(value)


class OutboundRelay:
    """A gateway's reader of the outbound streams of the channels it serves (see the module docstring)."""

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
        alive_ttl_ms: int = ALIVE_TTL_MS,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.redis = redis
        self.clock = clock
        self.delivery = delivery
        self.marks = marks
        """The run tables (:class:`~bot.store.sql.repos.runs.RunStore`): outbox entries are marked sent here, then
        the worker hears."""
        self.channels = channels
        self._marking: set[int] = set()
        """Outbox entries being sent now (a second request for one, after a worker's crash, is skipped)."""
        self.name = name
        self.alive = Liveness(redis, name, ttl_ms=alive_ttl_ms, clock=clock)
        self.claim_idle_ms = claim_idle_ms
        """Entries pending this long with a consumer that has no liveness key, or with this relay and not in its
        lanes, are claimed as in doubt (a last resort: a dead gateway's are taken over within seconds, a live one's
        stay its own)."""
        self.taken_over = 0
        """Entries taken over from dead gateways so far."""
        self._room = asyncio.Semaphore(max_pending)
        self._queued: set[str] = set()
        """Ids of the entries in the lanes (a stale claim does not queue one twice)."""
        self._lanes: Lanes[_Out] = Lanes(self._run, self._finished, workers=max_concurrent)
        """A chat's entries one at a time, in stream order; chats side by side (up to ``max_concurrent``)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._answers: Batched[tuple[Any, Any, dict[Any, Any], str | None]] = Batched(
            redis, _add_answer, "answers", _expire_replies, transaction=True
        )
        """Each entry's answer to its worker and acknowledgement (together or not at all), with whatever else
        finished meanwhile."""

    async def start(self) -> None:
        if not self.channels:
            return
        for channel in self.channels:
            await ensure_group(self.redis, outbound_stream(channel), GATEWAYS)
        await self.alive.announce()
        await self._take_over_dead()  # before reading: what a killed gateway left goes first
        self._tasks = [
            asyncio.create_task(self._loop(), name="outbound-relay"),
            asyncio.create_task(self._liveness_loop(), name="relay-liveness"),
        ]

    async def stop(self, timeout: float = 5.0) -> None:
        reading = self._tasks[:1]
        for task in reading:
            await cancel_and_wait(task)
        await self._lanes.join(timeout)
        await self._answers.flushed()
        for task in self._tasks[1:]:
            await cancel_and_wait(task)
        if self._tasks:
            await self.alive.stop()  # what is left pending is taken over by the next gateway at once

    async def _loop(self) -> None:
        streams = {outbound_stream(c): ">" for c in self.channels}
        rounds = 0
        while True:
            consumer = self.alive.consumer
            try:
                if rounds % 50 == 0:
                    await self._claim_stale()
                rounds += 1
                replies = await self.redis.xreadgroup(GATEWAYS, consumer, streams, count=100, block=1000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("relay: reading the outbound streams failed (retrying): %s", exc)
                await self.clock.sleep(1.0)
                continue
            for stream, entries in replies or []:
                for entry_id, fields in entries:
                    await self._push(_Out(stream, entry_id, fields, consumer))

    async def _liveness_loop(self) -> None:
        """Renew the key; look for dead gateways beside it (a take-over that waits for room in the lanes must not
        hold the renewals up)."""
        taking: asyncio.Task[None] | None = None
        try:
            while True:
                await self.clock.sleep(self.alive.every_s)
                try:
                    await self.alive.renew()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # Redis away: nothing is sent past ``until`` meanwhile
                    log.warning("relay: keeping this gateway's liveness failed: %s", exc)
                    continue
                if taking is None or taking.done():
                    taking = asyncio.create_task(self._take_over_safely(), name="relay-take-over")
        finally:
            if taking is not None:
                await cancel_and_wait(taking)

    async def _take_over_safely(self) -> None:
        try:
            await self._take_over_dead()
        except Exception as exc:
            log.warning("relay: looking for dead gateways failed: %s", exc)

    async def _take_over_dead(self) -> None:
        for channel in self.channels:
            stream = outbound_stream(channel)
            for consumer in await self.alive.dead(stream, GATEWAYS):
                taken = await self._take_over(stream, consumer)
                self.taken_over += taken
                if taken:
                    log.warning("relay: %d entries left by the dead gateway %s are sent from here", taken, consumer)

    async def _take_over(self, stream: str, dead: str) -> int:
        """Claim what ``dead`` read and did not acknowledge, oldest first, as in doubt."""
        taken = 0
        for _ in range(1000):
            pending = await self.redis.xpending_range(stream, GATEWAYS, "-", "+", TAKE_OVER_COUNT, consumername=dead)
            if not pending:
                break
            me = self.alive.consumer
            ids = [p["message_id"] for p in pending]
            # A minimum idle time: of two gateways claiming at once, the second finds the entries just claimed.
            claimed = await self.redis.xclaim(stream, GATEWAYS, me, self.alive.ttl_ms, ids)
            for entry_id, fields in claimed:
                if fields:
                    taken += 1
                    await self._push(_Out(stream, entry_id, fields, me, doubt=True))
                else:  # trimmed away meanwhile: nothing to send
                    await self.redis.xack(stream, GATEWAYS, entry_id)
            if not claimed or len(pending) < TAKE_OVER_COUNT:
                break
        return taken

    async def _send_plain(self, message: OutboundMessage) -> str | None:
        ref: str | None = await self.delivery.send(message)
        return ref

    async def _send_once(
        self, outbox_id: int, message: OutboundMessage, interrupt_id: str | None, again: bool
    ) -> str | None:
        """A committed outbox entry: sent unless it was sent already, and marked sent before the worker hears.
        Only a recovery's resend or an entry in doubt (``again``) reads the outbox first: a first send cannot have
        been sent before (that read was a round trip per reply)."""
        if outbox_id in self._marking:
            return None  # a worker's crash made its next owner ask again: on its way from here already
        if again and not await self.marks.is_unsent(outbox_id):
            return await self._sent_ref(interrupt_id)  # sent once already
        self._marking.add(outbox_id)
        try:
            ref = await self._send_plain(message)
            await self.marks.sent(outbox_id, ref, interrupt_id, wait=True)
            return ref
        finally:
            self._marking.discard(outbox_id)

    async def _sent_ref(self, interrupt_id: str | None) -> str | None:
        """The reference of a prompt sent before (kept on its interrupt); other entries keep none once sent."""
        if interrupt_id is None:
            return None
        row = await self.marks.get_interrupt(interrupt_id)
        return row.prompt_ref if row is not None else None

    async def _claim_stale(self) -> None:
        """A last resort: entries pending for ``claim_idle_ms`` with this relay and not in its lanes (their sending
        failed), or with a consumer that has no liveness key, are sent from here, as in doubt.  A live gateway's
        entries stay its own, however long its platform makes it wait (a flood control's ``retry_after``)."""
        me = self.alive.consumer
        for channel in self.channels:
            stream = outbound_stream(channel)
            stale = await self.redis.xpending_range(stream, GATEWAYS, "-", "+", 100, idle=self.claim_idle_ms)
            owners = sorted({text_of(e["consumer"]) for e in stale} - {me})
            alive = {
                o for o, key in zip(owners, await self.redis.mget([alive_key(o) for o in owners]), strict=True) if key
            }
            ids = [
                e["message_id"]
                for e in stale
                if text_of(e["consumer"]) not in alive and text_of(e["message_id"]) not in self._queued
            ]
            if not ids:
                continue
            for entry_id, fields in await self.redis.xclaim(stream, GATEWAYS, me, self.claim_idle_ms, ids):
                if fields:
                    await self._push(_Out(stream, entry_id, fields, me, doubt=True))

    async def _push(self, out: _Out) -> None:
        await self._room.acquire()
        self._queued.add(text_of(out.entry_id))
        self._lanes.push(_field(out.fields, "chat") or "", out)

    async def _run(self, _chat: str, out: _Out) -> None:
        await self._send(out)

    def _finished(self, out: _Out) -> None:
        self._queued.discard(text_of(out.entry_id))
        self._room.release()

    async def _send(self, out: _Out) -> None:
        fields = out.fields
        try:
            if not self.alive.alive(out.consumer):
                return  # read under a name that may be dead now: left pending, taken over (rule 5)
            if out.doubt and _field(fields, "reply") is None:
                ref = None  # a typing indicator of a dead gateway's: stale by now
            else:
                ref = await self._deliver(fields, out.doubt)
            await self._answer((out.stream, out.entry_id, fields, ref))
        except Exception as exc:
            log.warning("relay: could not finish outbound entry %s: %s", out.entry_id, exc)

    async def _deliver(self, fields: dict[Any, Any], doubt: bool) -> str | None:
        outbox = _field(fields, "outbox")
        try:
            message = OutboundMessage.model_validate_json(_field(fields, "message") or "")
        except ValueError as exc:
            log.error("relay: an outbound entry cannot be read and is dropped: %s", exc)
            return None
        if not outbox:
            return await self._send_plain(message)
        again = doubt or _field(fields, "again") == "1"
        return await self._send_once(int(outbox), message, _field(fields, "interrupt"), again)

    async def _answer(self, item: tuple[Any, Any, dict[Any, Any], str | None]) -> None:
        """Answer the worker and acknowledge, and wait until Redis has both: the chat's next entry starts after
        (rule 3).  Redis away: tried a few times, then the chat goes on (the entry stays pending, in doubt)."""
        for attempt in range(ANSWER_TRIES):
            try:
                await self._answers.call(item)
                return
            except Exception as exc:
                if attempt == ANSWER_TRIES - 1 or _refused(exc):
                    raise
                log.warning("relay: answering for outbound entry %s failed (retrying): %s", item[1], exc)
                await self.clock.sleep(0.2 * (attempt + 1))


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
