"""The handling side as the composition root builds it: the inbound pipeline (:func:`build_pipeline`, the one list
of stages, each built with exactly what it uses), the supervisor that runs it, the durable inbox, channel
start-up, the scaled-out parts and the ops endpoints.

Adding a stage is one edit here (beside writing it in :mod:`bot.gateway.stages`): its construction at its place in
:func:`build_pipeline`, with its dependencies built from the gateway's parts in the same expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bot.access import AccessPolicy
from bot.bus import Bus
from bot.clock import Clock
from bot.commands.registry import CommandRegistry
from bot.config.settings import Settings
from bot.delivery import Delivery
from bot.fencing import Fences
from bot.gateway.intake import DurableInbox
from bot.gateway.ops import OpsEndpoints
from bot.gateway.pipeline import AsRequest, Desk, Pipeline, Settle
from bot.gateway.scaled import Role, ScaleOut, ScaleParts
from bot.gateway.settled import HandledEvents
from bot.gateway.stages import Access, Addressed, Command, Identify, Media, Pending, Route, Run
from bot.gateway.starter import ChannelStarter, Progress
from bot.gateway.supervisor import Supervisor
from bot.gateway.turns import ChatTurns
from bot.interrupts.service import InterruptService
from bot.media.service import MediaService
from bot.ops.metrics import Metrics
from bot.routing.policy import RoutePolicy
from bot.runs.catalog import AgentCatalog
from bot.runs.manager import RunManager
from bot.runs.scheduled import ScheduledMessages
from bot.store.base import EventLog
from bot.store.bundle import PartitionedStore
from bot.store.console_ports import BacklogCounts
from bot.store.ports import Runs, TurnStore
from bot.tracing.recorder import Tracing
from channels.base import Channel


class HandlingStore(TurnStore, EventLog, PartitionedStore, Protocol):
    """The store as the handling side uses it: marking events handled, the inbox's log, partitions."""


class Backlogs(Protocol):
    """The repositories, as far as the ops endpoints read them (the backlog counts)."""

    @property
    def console(self) -> BacklogCounts: ...


class HandlingHost(Protocol):
    """What the handling side uses of the gateway it is built in (every part is built before it)."""

    settings: Settings
    delivery: Delivery
    catalog: AgentCatalog
    manager: RunManager
    interrupts: InterruptService
    routes: RoutePolicy
    commands: CommandRegistry
    access: AccessPolicy
    turns: ChatTurns
    tracing: Tracing
    media: MediaService
    clock: Clock
    handled: HandledEvents | None
    bus: Bus
    role: Role
    redis: Any
    metrics: Metrics
    scheduled: ScheduledMessages
    fences: Fences
    channels: list[Channel]

    @property
    def store(self) -> HandlingStore: ...

    @property
    def runs(self) -> Runs: ...

    @property
    def repos(self) -> Backlogs: ...

    def is_started(self) -> bool: ...


def build_pipeline(g: HandlingHost, desk: Desk) -> Pipeline:
    """Every stage in the order every inbound event meets them, each with exactly what it uses.  ``media`` comes
    before ``pending``: a voice note or a photo that answers a pending question is read into text first."""
    settle = Settle(desk)
    request = AsRequest(
        [
            Pending(g.interrupts),
            Route(g.routes, g.catalog),
            Run(g.runs, g.store, g.manager, g.tracing, desk),
        ],
        settle,
    )
    return Pipeline(
        [
            Identify(g.access),
            Access(),
            Addressed(g.runs, g.settings.channels),
            Command(g.commands, frozenset({g.settings.bot.name.lower()})),
            Media(g.media.intake, desk),
            request,
        ],
        settle,
    )


@dataclass(frozen=True)
class Handling:
    """The handling side's parts, as :func:`build_handling` made them."""

    supervisor: Supervisor
    inbox: DurableInbox
    starter: ChannelStarter
    scale: ScaleOut | None
    ops: OpsEndpoints


def build_handling(g: HandlingHost, progress: Progress | None) -> Handling:
    """The supervisor (the inbound pipeline), the durable inbox, channel start-up, the scaled-out parts (``bus.url``)
    and the ops endpoints (health, metrics)."""
    supervisor = Supervisor(
        limits=g.settings.limits,
        store=g.store,
        delivery=g.delivery,
        manager=g.manager,
        interrupts=g.interrupts,
        runs=g.runs,
        access=g.access,
        turns=g.turns,
        build_pipeline=lambda desk: build_pipeline(g, desk),
        clock=g.clock,
        handled=g.handled,
    )
    inbox = DurableInbox(
        g.store,
        g.bus,
        access=g.access,
        limits=g.settings.limits,
        notify=g.delivery.send,
        press_check=supervisor.check_press if g.role == "all" else None,
        handled_here=g.redis is None,
        metrics=g.metrics,
        clock=g.clock.monotonic,
    )
    starter = ChannelStarter(g.channels, inbox, progress=progress)
    scale = None
    if g.redis is not None:
        parts = ScaleParts(
            bus=g.settings.bus,
            store=g.store,
            runs=g.runs,
            manager=g.manager,
            interrupts=g.interrupts,
            scheduled=g.scheduled,
            supervisor=supervisor,
            turns=g.turns,
            inbox=inbox,
            delivery=g.delivery,
            starter=starter,
            fences=g.fences,
            clock=g.clock,
        )
        scale = ScaleOut(parts, g.role, g.redis)
    ops = OpsEndpoints(
        g.settings.metrics,
        g.metrics,
        g.repos.console,
        g.bus,
        started=g.is_started,
        redis=g.redis,
        **scale.ops_checks() if scale is not None else {},
    )
    return Handling(supervisor, inbox, starter, scale, ops)
