"""The composition root: builds the gateway from settings and runs it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from agents.models.base import Model
from agents.react import ASK_USER_TOOL
from agents.tools.base import Tool
from bot.access import AccessPolicy
from bot.bus import Bus, InMemoryBus
from bot.clock import SYSTEM_CLOCK, Clock
from bot.commands.admin import register_admin_commands
from bot.commands.builtin import register_builtin_commands
from bot.commands.context import CommandContext
from bot.commands.jobs import register_job_commands
from bot.commands.memory import register_memory_commands
from bot.commands.pairing import register_pairing_commands
from bot.commands.registry import CommandRegistry
from bot.commands.session import register_session_commands
from bot.commands.usage import register_usage_commands
from bot.config.settings import ConfigError, Settings
from bot.delivery import Delivery
from bot.events import ChatKey, InboundMessage
from bot.fencing import NO_FENCES, Fences
from bot.gateway.intake import DurableInbox
from bot.gateway.mcp_pool import McpPool
from bot.gateway.ops import OpsEndpoints
from bot.gateway.parts import build_channels, builtin_tools, warn_unknown_references
from bot.gateway.scaled import ROLES, Role, ScaleOut, connect_redis, make_bus
from bot.gateway.settled import HandledEvents
from bot.gateway.starter import ChannelStarter, Progress
from bot.gateway.supervisor import Supervisor
from bot.gateway.turns import ChatTurns
from bot.http import HttpServer
from bot.interrupts.expiry import ExpiryTimers
from bot.interrupts.service import InterruptService
from bot.jobs.service import JobService
from bot.jobs.tools import job_tools
from bot.jobs.triggers import Trigger
from bot.media.service import MediaService
from bot.memory.service import SESSION_TOOL, MemoryService
from bot.models import ModelCatalog
from bot.ops.budgets import Budgets
from bot.ops.metrics import Metrics
from bot.pairing import Pairing, PairingDesk
from bot.routing import Router
from bot.routing.policy import RoutePolicy
from bot.runs.catalog import AgentCatalog, AgentDef
from bot.runs.manager import RunManager, ToolPool
from bot.runs.recovery import RecoveryReport, recover
from bot.runs.scheduled import ScheduledMessages
from bot.store import SqlStore, store_from_settings
from bot.store.pairing import PairingStore
from bot.store.repos import SqlRepos
from bot.store.runs import RunStore
from bot.tracing.recorder import OtelSink, Redactor, Sink, Tracing
from bot.web.actions import ConsoleActions
from bot.web.auth import Sessions
from bot.web.console import WebConsole
from bot.web.data import ConsoleData
from bot.web.health import HealthView
from channels.base import (
    Channel,
    Closable,
    ForgetsMessages,
    LimitsText,
    PrintsAsWritten,
    ServesHttp,
)
from channels.registry import PLUGINS

log = logging.getLogger(__name__)


class Gateway:
    """Everything wired together: store, bus, agents, router, runs, interrupts, channels, HTTP."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: Model | None = None,
        channels: Sequence[Channel] | None = None,
        store: SqlStore | None = None,
        tools: Sequence[Tool] | None = None,
        trace_sinks: Sequence[Sink] | None = None,
        progress: Progress | None = None,
        role: Role = "all",
        redis: Any = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``clock``: everything that waits on time (expiry, scheduled messages, jobs, leases, rate limits,
        streaming, retention and flushes) reads and waits on it; tests pass a :class:`~bot.clock.FakeClock`."""
        self.settings = settings
        self.clock = clock
        self.progress = progress or (lambda _line: None)
        """Start-up progress lines, for a person waiting at a terminal."""
        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
        if role != "all" and not settings.bus.url:
            raise ConfigError(
                f"--role {role} runs beside other processes: set bus.url (redis://host:6379/0, or REDIS_URL) "
                "and store.url (postgresql://…, or DATABASE_URL)"
            )
        self.role = role
        self.fences = Fences(settings.bus.partitions, clock.monotonic) if settings.bus.url else NO_FENCES
        """The partitions this process holds and their fencing tokens (scaled out; nothing fenced otherwise)."""
        self.scale = ScaleOut(self, role, redis or connect_redis(settings.bus.url)) if settings.bus.url else None
        self.metrics = Metrics()
        self.models = ModelCatalog(settings, model, self.metrics)
        self.model = self.models.main
        self.store = store or store_from_settings(
            settings.store,
            exclusive=self.scale is None,
            shared=self.scale is not None,
            secrets=settings.secrets(),
            commit_timer=self._commit_timed,
            clock=clock,
        )
        self.repos = SqlRepos(self.store, Trigger)
        self.runs = RunStore(
            self.store, runs_days=settings.store.runs_retention_days, audit_days=settings.store.audit_retention_days
        )
        if trace_sinks is None:
            otel = OtelSink.from_config(settings.tracing)
            trace_sinks = [otel] if otel is not None else []
        self.tracing = Tracing(
            self.repos.traces,
            settings.tracing,
            Redactor.from_settings(settings),
            trace_sinks,
            self.metrics.observe,
            clock,
        )
        self.pairing = Pairing(settings.pairing, PairingStore(self.store), self.runs, clock)
        self.access = AccessPolicy(settings.channels, settings.web, self.pairing)
        self.turns = ChatTurns(settings.bot.name)
        """The chats running a request: what ``/cancel`` stops, and so what the bus treats as urgent."""
        self.bus: Bus = (
            make_bus(settings, self.scale.redis)
            if self.scale is not None
            else InMemoryBus(
                max_concurrent=settings.bus.max_concurrent_chats,
                max_pending=settings.bus.max_pending,
                urgent=self.turns.is_urgent,
            )
        )
        self.handled = HandledEvents() if self.scale is None else None
        """What the web console awaits after a press (handled in this process only)."""
        self.delivery = Delivery(settings.secrets(), marks=self.runs, metrics=self.metrics)
        self.ready = asyncio.Event()
        """Set as the last step of :meth:`start` (a terminal holds its first prompt until then)."""
        if role == "worker":
            self.channels: list[Channel] = []
        else:
            self.channels = (
                list(channels)
                if channels is not None
                else build_channels(settings, self.settled, self.metrics.platform_rate_limited, clock, self.ready.wait)
            )
        self.scheduled = ScheduledMessages(self.repos.scheduled, self.delivery, clock, self.fences)
        self.media = MediaService(settings, self.model, self.delivery, clock)
        self.jobs = (
            JobService(
                settings.jobs,
                self.repos.jobs,
                deliver=self.delivery.deliver,
                publish=self._publish_job_event,
                zone_of=self._zone_of,
                clock=clock,
                counted=self.metrics.job_fired,
            )
            if settings.jobs.enabled
            else None
        )
        self.tools: list[Tool] = [
            *(tools if tools is not None else builtin_tools(settings)),
            ASK_USER_TOOL,
            *self.scheduled.tools(),
            *self.media.tools(),
            *(job_tools(self.jobs, self.access.is_admin_account) if self.jobs is not None else []),
        ]
        self.memory = MemoryService(
            settings,
            self.store,
            memories=self.repos.memories,
            scrub=self.repos.scrub,
            summary_model=self.models.summariser(settings.memory.summary.model),
            embedder=self.models.embedder(embedding) if (embedding := settings.memory.embeddings.model) else None,
            flush_traces=self.tracing.flush,
        )
        self.catalog = AgentCatalog.load(settings)
        warn_unknown_references(
            self.catalog,
            {t.name for t in [*self.tools, *self.memory.tools()]} | {SESSION_TOOL},
            set(settings.mcp.servers),
        )
        self.router = Router(self.catalog.targets(), self.models.get(settings.routing.llm.model or None))
        self.routes = RoutePolicy(settings, self.store, self.catalog, self.router)
        self.mcp = McpPool(settings, self.delivery.send, clock)
        self.budgets = (
            Budgets(settings.budgets, self.repos.usage, clock=clock, refused=self.metrics.budget_refused)
            if settings.budgets.enabled
            else None
        )
        self.timers = ExpiryTimers(clock)
        self.manager = RunManager(
            settings=settings,
            store=self.store,
            runs=self.runs,
            catalog=self.catalog,
            model=self.model,
            models=self.models,
            delivery=self.delivery,
            timers=self.timers,
            tools=ToolPool(self.tools, self.mcp),
            tracing=self.tracing,
            memory=self.memory,
            budgets=self.budgets,
            metrics=self.metrics,
            text_limits={
                **{name: PLUGINS[name].text_limit for name in settings.channels.enabled()},
                **{c.name: c.text_limit if isinstance(c, LimitsText) else None for c in self.channels},
            },
            prints_as_written=frozenset(
                c.name for c in self.channels if isinstance(c, PrintsAsWritten) and c.prints_as_written
            ),
            clock=clock,
        )
        self.interrupts = InterruptService(
            self.runs,
            self.manager,
            self.delivery,
            self.timers,
            self.fences,
            self.handled.handled if self.handled else None,
        )
        self.commands = CommandRegistry()
        context = CommandContext(
            settings=settings,
            commands=self.commands,
            store=self.store,
            runs=self.runs,
            interrupts=self.interrupts,
            routes=self.routes,
            delivery=self.delivery,
            scheduled=self.scheduled,
            tracing=self.tracing,
            memory=self.memory,
        )
        register_builtin_commands(context)
        register_memory_commands(context)
        register_usage_commands(context, self.budgets)
        register_job_commands(context, self.jobs)
        register_session_commands(context, self.models, self.bus.queued, self.budgets)
        register_admin_commands(context)
        register_pairing_commands(context, self.pairing)
        self.supervisor = Supervisor(
            settings=settings,
            store=self.store,
            delivery=self.delivery,
            catalog=self.catalog,
            manager=self.manager,
            interrupts=self.interrupts,
            runs=self.runs,
            routes=self.routes,
            commands=self.commands,
            access=self.access,
            turns=self.turns,
            tracing=self.tracing,
            media=self.media.intake,
            clock=clock,
            handled=self.handled,
        )
        self.inbox = DurableInbox(
            self.store,
            self.bus,
            access=self.access,
            limits=settings.limits,
            notify=self.delivery.send,
            press_check=self.supervisor.check_press if role == "all" else None,
            handled_here=self.scale is None,
            metrics=self.metrics,
            clock=clock.monotonic,
        )
        self.starter = ChannelStarter(self.channels, self.inbox, progress=progress)
        self.http: HttpServer | None = None
        self.ops = OpsEndpoints(
            settings.metrics,
            self.metrics,
            self.repos.console,
            self.bus,
            started=self.is_started,
            redis=self.scale.redis if self.scale is not None else None,
            **self.scale.ops_checks() if self.scale is not None else {},
        )
        self.web = self._console() if settings.web.enabled else None
        self.recovery: RecoveryReport | None = None
        self._started = False

    def _console(self) -> WebConsole:
        """The web console (``web.enabled``): its presses enter through the inbox like a platform's."""
        health = HealthView(
            status=self.health,
            sample=self.ops.sample,
            metrics=self.metrics,
            catalog=lambda: self.routes.catalog,
            tools=[*self.tools, *self.memory.tools()],
            budgets=self.budgets,
            jobs=self.jobs.jobs if self.jobs is not None else None,
        )
        return WebConsole(
            self.settings.web,
            data=ConsoleData(self.repos.console, self.runs, self.tracing, self.routes, self.repos.evals),
            actions=ConsoleActions(self.store, self.runs, self.inbox.submit, self._tools_of, handled=self.handled),
            sessions=Sessions(self.settings.web, self.repos.web_sessions, self.clock),
            health=health,
            clock=self.clock,
            pairing=PairingDesk(self.pairing.store.waiting, self._pair_from_console),
        )

    async def _pair_from_console(self, code: str, actor: str) -> str:
        approval = await self.pairing.approve(code, actor)
        if approval.tell is not None:
            await self.delivery.send(approval.tell)
        return approval.reply

    async def _tools_of(self, agent_name: str) -> Sequence[Tool]:
        agent = self.routes.catalog.get(agent_name)
        return await self.tool_pool(agent) if agent is not None else self.tools

    async def settled(self) -> None:
        """Wait until everything received so far was handled and its notices went out."""
        await self.bus.join()
        if self.scale is not None and self.scale.consumer is not None:
            await self.scale.consumer.join()
        await self.inbox.settled()

    async def _publish_job_event(self, event: InboundMessage) -> None:
        await self.inbox.publish_stored(event)

    async def _zone_of(self, chat: ChatKey) -> str:
        zone = (await self.store.chat_settings(chat.settings_key)).get("timezone")
        return str(zone) if zone else self.settings.jobs.timezone

    def is_started(self) -> bool:
        """Serving: the store migrated and opened, recovery done, channels started."""
        return self._started

    def _commit_timed(self, seconds: float) -> None:
        self.metrics.commit_seconds.labels(self.store.dialect).observe(seconds)

    async def tool_pool(self, agent: AgentDef, chat: ChatKey | None = None) -> list[Tool]:
        """Every tool ``agent`` could be offered: built-in, gateway and its MCP servers' tools (connected lazily).

        The catalog then applies the agent's MCP servers and allow/deny.  An MCP server that cannot serve is
        left out; ``chat`` (the run's chat) gets one notice per outage.
        """
        extra = await self.mcp.tools(agent, chat)
        return [*self.tools, *extra] if extra else self.tools

    async def _show_pending_again(self) -> None:
        """A terminal keeps no messages across a restart: a pending prompt is shown again there, with its buttons."""
        forgetful = {c.name for c in self.channels if isinstance(c, ForgetsMessages) and c.forgets_messages}
        if not forgetful:
            return
        for row in await self.runs.all_pending():
            if row.chat_key.split(":", 1)[0] in forgetful:
                await self.interrupts.show_again(row)

    def health(self) -> dict[str, Any]:
        if not self._started:
            status = "starting"
        elif not self.channels:
            status = "no channels"
        elif self.starter.degraded:
            status = "degraded"
        else:
            status = "ok"
        if self.role == "worker":
            status = "ok" if self._started else "starting"
        report = {
            "status": status,
            "channels": dict(self.starter.status),
            "model": self.model.name,
            "agents": len(self.catalog.agents),
            "active_chats": self.bus.active_chats,
        }
        if self.scale is not None:
            report.update(self.scale.health())
        return report

    async def start(self) -> None:
        where = self.settings.store.database_url().split("@")[-1].removeprefix("sqlite:///")
        self.progress(f"store: {self.store.dialect} {where}")
        await self.store.start()
        self.mcp.start()
        self.media.start()
        await self.tracing.start()
        if self.budgets is not None:
            self.budgets.start()
        if self.scale is None:
            self.bus.subscribe(
                self.inbox.tracked(self.supervisor.handle),
                on_urgent=self.inbox.tracked(self.supervisor.handle_urgent),
            )
        elif self.role == "worker":
            for remote in self.scale.remote_channels(self.settings.channels.enabled()):
                self.delivery.register(remote)
        for channel in self.channels:
            self.delivery.register(channel)
        self.interrupts.start()
        if self.scale is None:
            self.recovery = await recover(self.runs, self.manager, self.interrupts)
            self.recovery.late_scheduled = await self.scheduled.start()
            self.recovery.inbox = await self.inbox.recover()
        elif self.scale.handles:
            await self.scale.start_handling()
        if self.jobs is not None and (self.scale is None or self.scale.handles):
            self.jobs.start()  # fires are claimed rows: every handling process may look, one fires each
        webhooks = [c for c in self.channels if isinstance(c, ServesHttp) and c.needs_http]
        if self.settings.http.enabled or webhooks or self.web is not None:
            self.http = HttpServer(self.settings.http.host, self.settings.http.port, self.health)
            self.ops.mount(self.http)
            if self.web is not None:
                self.web.mount(self.http)
            for channel in webhooks:
                channel.mount(self.http)
            await self.http.start()
        if not self.channels and self.role != "worker":
            log.warning("no channel is enabled: nobody can reach this bot (enable one under channels.*)")
        if self.scale is None:
            await self.starter.start_all()
        elif self.scale.receives:
            await self.scale.start_receiving(self.channels)
        await self._show_pending_again()
        self._started = True
        log.info(
            "gateway started: role=%s channels=%s model=%s agents=%s",
            self.role,
            [c.name for c in self.channels],
            self.model.name,
            list(self.catalog.agents),
        )
        self.ready.set()

    async def stop(self, timeout: float = 30.0) -> None:
        """Stop receiving, let in-flight work finish (up to ``timeout``), then close everything."""
        self._started = False
        self.ready.clear()
        if self.scale is not None:
            await self.scale.stop_receiving()
        await self.starter.stop()
        for channel in self.channels:
            await channel.stop()  # stop receiving; in-flight runs may still send
        await self.inbox.close(timeout=min(timeout, 0.5))
        await self.bus.close(timeout)
        if self.scale is not None:
            await self.scale.stop_handling(timeout)
            await self.scale.stop_relay()
        for channel in self.channels:
            if isinstance(channel, Closable):
                await channel.close()
        await self.interrupts.drain()
        self.scheduled.stop()
        if self.jobs is not None:
            await self.jobs.stop()
        if self.http is not None:
            if self.web is not None:
                self.web.close()
            await self.http.stop()
        await self.mcp.aclose()
        await self.media.close()
        await self.models.aclose()
        if self.budgets is not None:
            await self.budgets.stop()
        await self.tracing.stop()
        await self.store.close()
        if self.scale is not None:
            await self.scale.close()

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def serve(gateway: Gateway, stop: asyncio.Event) -> None:
    """Run until ``stop`` is set, then drain and close."""
    await gateway.start()
    try:
        await stop.wait()
    finally:
        await gateway.stop()
