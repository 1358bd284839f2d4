"""Stream keys, partitions and the inbound publisher of the Redis bus.

Inbound events of a chat all go to one partition stream, ``bot:in:<crc32(chat_key) % P>``
(``zlib.crc32``, never ``hash()``: str hashes are salted per process).  Entries carry the
event's JSON; the consumer group ``workers`` reads them (see :mod:`bot.scale.consumer`).
``bot:queued`` counts each chat's events on the bus and not yet handled, so a gateway can
bound a flooding chat as the in-process bus does.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable
from typing import Any

from bot.bus import BusClosed, BusUnavailable, Handler, Urgent
from bot.events import Action, InboundEvent, InboundMessage
from bot.scale.batched import Batched

log = logging.getLogger(__name__)

PREFIX = "bot:"
GROUP = "workers"
QUEUED = PREFIX + "queued"
WORKERS = PREFIX + "workers"
"""A sorted set: worker name → the time (ms) it last said it was alive."""

DECREMENT = """
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n <= 0 then redis.call('hdel', KEYS[1], ARGV[1]) end
return n
"""
"""A handled event leaves the chat's count (the field goes at zero, so the hash holds only busy chats)."""


LAG_SCAN = 10_000
"""Before Redis 7 (no ``lag`` in XINFO GROUPS) the undelivered entries are counted up to this many."""


def partition_of(chat_key: str, partitions: int) -> int:
    return zlib.crc32(chat_key.encode()) % partitions


def owner_of(partitions: int, held: set[int]) -> Callable[[str], bool]:
    """Whether a chat key belongs to one of the ``held`` partitions."""
    return lambda chat_key: partition_of(chat_key, partitions) in held


def inbound_stream(partition: int) -> str:
    return f"{PREFIX}in:{partition}"


def partition_lease(partition: int) -> str:
    return f"{PREFIX}lease:partition:{partition}"


def text_of(value: bytes | str) -> str:
    """A Redis reply value as text (the client hands out bytes)."""
    return value.decode() if isinstance(value, bytes) else value


async def ensure_group(redis: Any, stream: str, group: str) -> None:
    """Create ``group`` on ``stream`` (and the stream) unless another process already did."""
    try:
        await redis.xgroup_create(stream, group, id="0", mkstream=True)
    except Exception as exc:  # BUSYGROUP: it exists
        if "BUSYGROUP" not in str(exc):
            raise


def encode(event: InboundEvent) -> dict[str, str]:
    return {
        "kind": "action" if isinstance(event, Action) else "message",
        "chat": str(event.chat),
        "event": event.model_dump_json(),
    }


def decode(fields: dict[Any, Any]) -> InboundEvent:
    def text(key: str) -> str:
        return text_of(fields.get(key.encode(), fields.get(key)) or "")

    if text("kind") == "action":
        return Action.model_validate_json(text("event"))
    return InboundMessage.model_validate_json(text("event"))


class RedisBus:
    """The publishing side of the bus (a gateway's): ``publish`` returns once the event is in its stream.

    Handling happens in workers (:class:`~bot.scale.consumer.PartitionConsumer`, which takes the handlers);
    nothing subscribes here.
    """

    def __init__(self, redis: Any, *, partitions: int, maxlen: int, fresh_above: int = 0) -> None:
        self.redis = redis
        self.partitions = partitions
        self.maxlen = maxlen
        self.fresh_above = fresh_above
        """A chat whose last known count is at least this is asked again before it is bounded (counts fall
        while workers handle events, and only Redis sees that)."""
        self._known: dict[str, int] = {}
        self._closed = False
        self._publishing: Batched[tuple[str, dict[str, str]]] = Batched(redis, self._add, "events")

    def subscribe(self, handler: Handler, *, urgent: Urgent | None = None, on_urgent: Handler | None = None) -> None:
        raise TypeError("the Redis bus is consumed by a PartitionConsumer (a worker), not by subscribing")

    async def publish(self, event: InboundEvent) -> None:
        """Add ``event`` to its partition's stream.

        An event may be published twice (a platform's redelivery of one not handled yet, the sweep): its
        handling is still once, because the worker marks its inbox row handled under a guard first.
        """
        if self._closed:
            raise BusClosed("the bus is closed")
        chat = str(event.chat)
        try:
            # With the events other requests publish meanwhile: one round trip for all of them.
            _, count = await self._publishing.call((chat, encode(event)))
        except Exception as exc:  # redis.ConnectionError, TimeoutError, a refused write (OOM)...
            raise BusUnavailable(f"the Redis bus did not take the event: {exc}") from exc
        self._remember(chat, int(count))

    def _add(self, pipe: Any, item: tuple[str, dict[str, str]]) -> None:
        chat, fields = item
        pipe.xadd(inbound_stream(partition_of(chat, self.partitions)), fields, maxlen=self.maxlen, approximate=True)
        pipe.hincrby(QUEUED, chat, 1)

    def starts_now(self, chat_key: str) -> bool:
        return False  # another process takes it from the stream

    async def queued(self, chat_key: str) -> int:
        known = self._known.get(chat_key, 0)
        if known < self.fresh_above or not known:
            return known
        try:
            value = await self.redis.hget(QUEUED, chat_key)
        except Exception as exc:
            log.warning("bus: could not read the queue length of %s: %s", chat_key, exc)
            return known
        count = max(0, int(value or 0))
        self._remember(chat_key, count)
        return count

    def _remember(self, chat: str, count: int) -> None:
        if count > 0:
            self._known[chat] = count
            if len(self._known) > 100_000:
                self._known.clear()  # counts are only hints; they are asked again when they matter
        else:
            self._known.pop(chat, None)

    @property
    def active_chats(self) -> int:
        return len(self._known)

    async def depths(self) -> dict[int, tuple[int, float]]:
        """Per partition stream: entries not yet acknowledged by the workers (delivered or not), and the age of
        the oldest of them (from its entry id's milliseconds)."""
        streams = [inbound_stream(p) for p in range(self.partitions)]
        async with self.redis.pipeline(transaction=False) as pipe:
            for stream in streams:
                pipe.xinfo_groups(stream)
                pipe.xpending(stream, GROUP)
            replies = await pipe.execute(raise_on_error=False)
        now_ms = time.time() * 1000
        out: dict[int, tuple[int, float]] = {}
        for p, stream in enumerate(streams):
            groups, pending = replies[2 * p], replies[2 * p + 1]
            if isinstance(groups, Exception) or isinstance(pending, Exception):
                continue
            group = next((g for g in groups if text_of(g.get("name", b"")) == GROUP), None)
            if group is None:
                continue
            held = int(pending.get("pending") or 0)
            firsts = [text_of(pending["min"])] if held and pending.get("min") else []
            lag = group.get("lag")
            if lag is None or lag:
                # Redis 7 counts what was not delivered yet (``lag``); before 7 it is counted here (bounded).
                after = "(" + text_of(group.get("last-delivered-id") or b"0-0")
                entries = await self.redis.xrange(stream, min=after, count=1 if lag is not None else LAG_SCAN)
                lag = len(entries) if lag is None else int(lag)
                firsts += [text_of(entries[0][0])] if entries else []
            oldest = min((int(i.split("-", 1)[0]) for i in firsts), default=now_ms)
            out[p] = (lag + held, max(0.0, (now_ms - oldest) / 1000))
        return out

    async def join(self) -> None:
        """Nothing to wait for here: handling happens in the workers."""

    async def close(self, timeout: float | None = None) -> None:
        self._closed = True
