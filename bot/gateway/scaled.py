"""The parts of a gateway that exist only when it runs as several processes (``bus.url`` set).

``--role gateway``: channels receive into the PostgreSQL inbox, then the partition streams; the
outbound relay sends what workers ask; exclusive connections go to one gateway by lease; a sweep
republishes inbox rows the bus lost.  ``--role worker``: a partition consumer hands the held
partitions' events to the supervisor and recovers each partition it takes.  ``--role all``: both.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from bot.aio import cancel_and_wait
from bot.clock import Clock
from bot.config.settings import BusSection, ConfigError, Settings
from bot.delivery import Delivery
from bot.fencing import Fences
from bot.gateway.intake import DurableInbox
from bot.gateway.starter import ChannelStarter
from bot.gateway.supervisor import Supervisor
from bot.gateway.turns import ChatTurns
from bot.interrupts.service import InterruptService
from bot.ops.metrics import LeaseState
from bot.runs.manager import RunManager
from bot.runs.recovery import ChatWork, RecoveryReport, recovery_work
from bot.runs.scheduled import ScheduledMessages
from bot.scale.connections import ExclusiveConnections
from bot.scale.consumer import PartitionConsumer
from bot.scale.leases import Leases, process_name
from bot.scale.packing import packing
from bot.scale.relay import OutboundRelay, RemoteChannel
from bot.scale.streams import PREFIX, RedisBus, owner_of, text_of
from bot.store.ports import PartitionedStore, Runs
from channels.base import Exclusive


@dataclass(frozen=True)
class ScaleParts:
    """The finished parts of the gateway the scaled-out parts work with (the composition root builds them last,
    once every one of these exists)."""

    bus: BusSection
    store: PartitionedStore
    runs: Runs
    manager: RunManager
    interrupts: InterruptService
    scheduled: ScheduledMessages
    supervisor: Supervisor
    turns: ChatTurns
    inbox: DurableInbox
    delivery: Delivery
    starter: ChannelStarter
    fences: Fences
    clock: Clock


log = logging.getLogger(__name__)

Role = Literal["all", "gateway", "worker"]
ROLES: tuple[Role, ...] = ("all", "gateway", "worker")
SWEEP_LEASE = PREFIX + "lease:sweep"
SETTINGS_CHANNEL = PREFIX + "settings"
"""Pub/sub: ``<process>|<settings key>`` of each committed settings change (the others drop their cached copy)."""
REDIS_READ_TIMEOUT_S = 90.0
"""Longer than any blocking call the bus makes (a worker waits up to 30 s for a gateway's answer)."""


def connect_redis(url: str) -> Any:
    """A client whose pool waits for a free connection (up to 20 s) instead of failing when all are busy: a
    worker holds one per message waiting for its gateway's answer, a gateway one per event being published."""
    try:
        import redis.asyncio as aioredis
    except ImportError:
        raise ConfigError(
            "bus.url is set but the Redis client is not installed: pip install -e '.[scale]' in the bot's clone"
        ) from None
    # redis-py 8 reads with a 5 s socket timeout by default, which cut the worker's 30 s wait for its gateway's
    # answer short (and the chat's next message went first): reads may take as long as the longest block.
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=512,
        timeout=20,
        socket_connect_timeout=5,
        socket_timeout=REDIS_READ_TIMEOUT_S,
        socket_keepalive=True,
        health_check_interval=30,
    )
    pool.connection_class = packing(pool.connection_class)  # the URL's (TCP, TLS, a Unix socket), hiredis packing
    return aioredis.Redis(connection_pool=pool)


class ScaleOut:
    """Starts and stops the scaled-out parts of a gateway for its role."""

    def __init__(self, parts: ScaleParts, role: Role, redis: Any) -> None:
        self.parts = parts
        self.role = role
        self.redis = redis
        bus = parts.bus
        self.partitions = bus.partitions
        self.name = process_name(role)
        self.consumer: PartitionConsumer | None = None
        self.relay: OutboundRelay | None = None
        self.exclusive: ExclusiveConnections | None = None
        self._sweep: asyncio.Task[None] | None = None
        self._settings: asyncio.Task[None] | None = None
        self.sweep_s = bus.sweep_s
        self.lease_ms = bus.lease_ms

    @property
    def receives(self) -> bool:
        return self.role in ("all", "gateway")

    @property
    def handles(self) -> bool:
        return self.role in ("all", "worker")

    def remote_channels(self, enabled: Sequence[str]) -> list[RemoteChannel]:
        """A worker's way out: each enabled channel through the gateways."""
        return [RemoteChannel(name, self.redis, maxlen=self.parts.bus.stream_maxlen) for name in enabled]

    def exclusive_channels(self, channels: Sequence[Any]) -> list[Any]:
        return [c for c in channels if isinstance(c, Exclusive) and c.exclusive_key is not None]

    def _share_settings(self) -> None:
        """Announce this process's settings changes and apply the others' (once, whatever the role)."""
        if self._settings is not None:
            return
        store = self.parts.store
        pending: set[asyncio.Task[Any]] = set()

        def announce(key: str) -> None:
            task = asyncio.ensure_future(self.redis.publish(SETTINGS_CHANNEL, f"{self.name}|{key}"))
            pending.add(task)
            task.add_done_callback(pending.discard)

        store.settings.published = announce
        self._settings = asyncio.create_task(self._settings_loop(), name="settings-changes")

    async def _settings_loop(self) -> None:
        store = self.parts.store
        while True:
            try:
                async with self.redis.pubsub() as pubsub:
                    await pubsub.subscribe(SETTINGS_CHANNEL)
                    store.settings.changed(None)  # whatever changed while nobody listened here
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        sender, _, key = text_of(message["data"]).partition("|")
                        if sender != self.name:
                            store.settings.changed(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the copies expire by their TTL meanwhile
                log.warning("settings announcements: %s (listening again)", exc)
                await self.parts.clock.sleep(1.0)

    async def start_handling(self) -> None:
        g = self.parts
        self._share_settings()
        await g.scheduled.start(adopt=False)
        self.consumer = PartitionConsumer(
            self.redis,
            name=self.name,
            partitions=self.partitions,
            lease_ms=self.lease_ms,
            handler=g.supervisor.handle,
            urgent=g.turns.is_urgent,
            on_urgent=g.supervisor.handle_urgent,
            on_acquire=self._take,
            on_release=self._drop,
            max_concurrent=g.bus.max_concurrent_chats,
            max_pending=g.bus.max_pending,
            fences=g.fences,
            raise_fence=g.store.raise_fence,
            clock=g.clock,
        )
        await self.consumer.start()

    async def start_receiving(self, channels: Sequence[Any]) -> None:
        g = self.parts
        self._share_settings()
        await g.inbox.recover()
        self.relay = OutboundRelay(
            self.redis,
            g.delivery,
            g.runs,
            [c.name for c in channels],
            name=self.name,
            max_concurrent=g.bus.max_concurrent_chats,
            clock=g.clock,
        )
        await self.relay.start()
        exclusive = self.exclusive_channels(channels)
        await g.starter.start_all(skip=exclusive)
        if exclusive:
            self.exclusive = ExclusiveConnections(
                self.redis,
                owner=self.name,
                lease_ms=self.lease_ms,
                starter=g.starter,
                channels=exclusive,
                clock=g.clock,
            )
            await self.exclusive.start()
        self._sweep = asyncio.create_task(self._sweep_loop(), name="inbox-sweep")

    async def _take(self, partitions: set[int]) -> Mapping[str, ChatWork]:
        """A partition's chats are ours now: forget what we cached of them, arm their pauses' and scheduled
        messages' timers; what its last owner left unfinished per chat is returned, to run first in each chat's
        lane (beside the new messages of the other chats, not before them)."""
        g = self.parts
        owns = owner_of(self.partitions, partitions)
        g.store.forget_chats(owns)
        report = RecoveryReport()
        work = await recovery_work(g.runs, g.manager, report, owns)
        report.expired = await g.interrupts.reconcile(owns=owns)
        report.late_scheduled = await g.scheduled.adopt(owns)
        log.info(
            "partitions %s taken over: %d chats to recover, %d pauses expired, %d late scheduled messages",
            sorted(partitions),
            len(work),
            len(report.expired),
            report.late_scheduled,
        )
        return work

    async def _drop(self, partitions: set[int]) -> None:
        """Before a partition's lease goes: what was handled is committed (the next owner's recovery must not
        take a finished run for one cut off), and nothing cached of its chats is trusted again."""
        await self.parts.store.flush()
        owns = owner_of(self.partitions, partitions)
        self.parts.store.forget_chats(owns)

    async def _sweep_loop(self) -> None:
        """Republish inbox rows committed long ago and never handled (Redis lost them); one gateway at a time."""
        leases = Leases(self.redis, self.name, int(self.sweep_s * 1000))
        while True:
            await self.parts.clock.sleep(self.sweep_s)
            try:
                if not await leases.acquire(SWEEP_LEASE):
                    continue
                before = self.parts.clock.utcnow() - timedelta(seconds=2 * self.sweep_s)
                count = await self.parts.inbox.recover(received_before=before)
                if count:
                    log.warning("inbox sweep: %d events stored long ago and not handled were published again", count)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("inbox sweep failed: %s", exc)

    async def stop_receiving(self) -> None:
        if self._sweep is not None:
            await cancel_and_wait(self._sweep)
        if self.exclusive is not None:
            await self.exclusive.stop()

    async def stop_handling(self, timeout: float) -> None:
        if self.consumer is not None:
            await self.consumer.stop(timeout)

    async def stop_relay(self) -> None:
        if self.relay is not None:
            await self.relay.stop()

    async def close(self) -> None:
        if self._settings is not None:
            await cancel_and_wait(self._settings)
        try:
            await self.redis.aclose()
        except Exception as exc:
            log.debug("closing the Redis client: %s", exc)

    def ops_checks(self) -> dict[str, Callable[[], Any]]:
        """For ``/readyz`` and ``/metrics``: a worker's partition leases, and why it is not ready when it cannot
        renew them."""

        def state() -> LeaseState | None:
            return self.consumer.lease_state() if self.consumer is not None else None

        def problem() -> str | None:
            return self.consumer.lease_problem() if self.consumer is not None else None

        return {"leases": state, "lease_problem": problem}

    def health(self) -> dict[str, Any]:
        info: dict[str, Any] = {"role": self.role, "process": self.name}
        if self.consumer is not None:
            info["partitions"] = len(self.consumer.owned)
            info["active_chats"] = self.consumer.active_chats  # handled here, not published here
        return info


def make_bus(settings: Settings, redis: Any) -> RedisBus:
    return RedisBus(
        redis,
        partitions=settings.bus.partitions,
        maxlen=settings.bus.stream_maxlen,
        fresh_above=min(settings.limits.chat_queue_notice, settings.limits.chat_queue_max),
    )
