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
from bot.gateway.console_parts import announce_console, build_console
from bot.gateway.handling import build_handling
from bot.gateway.mcp_pool import McpPool
from bot.gateway.parts import build_channels, build_media, builtin_tools, status_of, warn_unknown_references
from bot.gateway.scaled import ROLES, Role, ScaleOut, connect_redis, make_bus
from bot.gateway.settled import HandledEvents
from bot.gateway.starter import Progress
from bot.gateway.turns import ChatTurns
from bot.http import HttpServer
from bot.interrupts.expiry import ExpiryTimers
from bot.interrupts.service import InterruptService
from bot.jobs.service import JobService
from bot.jobs.tools import job_tools
from bot.jobs.triggers import Trigger
from bot.memory.service import SESSION_TOOL, MemoryService
from bot.models import ModelCatalog, ModelWrap
from bot.ops.budgets import Budgets
from bot.ops.metrics import Metrics
from bot.pairing import Pairing
from bot.routing import Router
from bot.routing.policy import RoutePolicy
from bot.runs.catalog import AgentCatalog
from bot.runs.manager import RunConfig, RunManager, ToolPool
from bot.runs.recovery import RecoveryReport, recover
from bot.runs.scheduled import ScheduledMessages
from bot.store.sql import SqlStore, store_from_settings
from bot.store.sql.repos import SqlRepos
from bot.store.sql.repos.pairing import PairingStore
from bot.store.sql.repos.runs import RunStore
from bot.tracing.recorder import OtelSink, Redactor, Sink, Tracing
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
        wrap_models: ModelWrap | None = None,
    ) -> None:
        """``clock``: everything that waits on time (expiry, scheduled messages, jobs, leases, rate limits,
        streaming, retention and flushes) reads and waits on it; tests pass a :class:`~bot.clock.FakeClock`.
        ``wrap_models``: around every model the gateway builds (an evaluation's response cache)."""
        self.settings = settings
        self.wrap_models = wrap_models
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
        self._build_store(store, model, trace_sinks, redis)
        self._build_intake_ports()
        self._build_channels(channels)
        self._build_services(tools)
        self._build_runs()
        self._build_commands()
        self._build_handling(progress)

    def _build_store(
        self, store: SqlStore | None, model: Model | None, trace_sinks: Sequence[Sink] | None, redis: Any
    ) -> None:
        """The scale-out parts (``bus.url``), metrics, models, the store and its repositories, tracing."""
        self.fences = Fences(self.settings.bus.partitions, self.clock.monotonic) if self.settings.bus.url else NO_FENCES
        """The partitions this process holds and their fencing tokens (scaled out; nothing fenced otherwise)."""
        self.redis: Any = (redis or connect_redis(self.settings.bus.url)) if self.settings.bus.url else None
        """Scaled out (``bus.url``): the Redis client of the bus, the relay, the leases (the parts are built last)."""
        self.scale: ScaleOut | None = None
        self.metrics = Metrics()
        self.models = ModelCatalog(
            self.settings.model,
            model,
            self.metrics,
            self.clock,
            self.wrap_models,
            timezone=self.settings.jobs.timezone,
            inline_max_mb=self.settings.media.inline_max_mb,
        )
        self.model = self.models.main
        self.store: SqlStore = store or store_from_settings(
            self.settings.store,
            exclusive=self.redis is None,
            shared=self.redis is not None,
            secrets=self.settings.secrets(),
            commit_timer=lambda seconds: self.metrics.commit_seconds.labels(self.store.dialect).observe(seconds),
            clock=self.clock,
        )
        self.repos = SqlRepos(self.store, Trigger)
        self.runs = RunStore(
            self.store,
            runs_days=self.settings.store.runs_retention_days,
            audit_days=self.settings.store.audit_retention_days,
        )
        if trace_sinks is None:
            otel = OtelSink.from_config(self.settings.tracing)
            trace_sinks = [otel] if otel is not None else []
        self.tracing = Tracing(
            self.repos.traces,
            self.settings.tracing,
            Redactor.configured(self.settings.model, self.settings.channels, self.settings.mcp),
            trace_sinks,
            self.metrics.observe,
            self.clock,
        )

    def _build_intake_ports(self) -> None:
        """Who may act (the pairing, the access policy), the busy chats, the bus, delivery."""
        self.pairing = Pairing(self.settings.pairing, PairingStore(self.store), self.runs, self.clock)
        self.access = AccessPolicy(self.settings.channels, self.settings.web, self.pairing)
        self.turns = ChatTurns(self.settings.bot.name)
        """The chats running a request: what ``/cancel`` stops, and so what the bus treats as urgent."""
        self.bus: Bus = (
            make_bus(self.settings, self.redis)
            if self.redis is not None
            else InMemoryBus(
                max_concurrent=self.settings.bus.max_concurrent_chats,
                max_pending=self.settings.bus.max_pending,
                urgent=self.turns.is_urgent,
            )
        )
        self.handled = HandledEvents() if self.redis is None else None
        """What the web console awaits after a press (handled in this process only)."""
        self.delivery = Delivery(self.settings.secrets(), marks=self.runs, metrics=self.metrics, clock=self.clock)
        self.ready = asyncio.Event()
        """Set as the last step of :meth:`start` (a terminal holds its first prompt until then)."""

    def _build_channels(self, channels: Sequence[Channel] | None) -> None:
        """The channel adapters this process runs (none for a worker)."""
        if self.role == "worker":
            self.channels: list[Channel] = []
        else:
            self.channels = (
                list(channels)
                if channels is not None
                else build_channels(
                    self.settings, self.settled, self.metrics.platform_rate_limited, self.clock, self.ready.wait
                )
            )

    def _build_services(self, tools: Sequence[Tool] | None) -> None:
        """Scheduled messages, media, jobs, the tools agents may be offered, memory."""
        caps = (self.settings.jobs.max_reminders_per_chat, self.settings.jobs.max_reminders_per_user)
        self.scheduled = ScheduledMessages(self.repos.scheduled, self.delivery, self.clock, self.fences, caps)
        self.media = build_media(self.settings, self.model, self.delivery, self.clock)
        self.jobs = (
            JobService(
                self.settings.jobs,
                self.repos.jobs,
                deliver=self.delivery.deliver,
                publish=self._publish_job_event,
                zone_of=self._zone_of,
                clock=self.clock,
                counted=self.metrics.job_fired,
            )
            if self.settings.jobs.enabled
            else None
        )
        self.tools: list[Tool] = [
            *(tools if tools is not None else builtin_tools(self.settings, self.clock)),
            ASK_USER_TOOL,
            *self.scheduled.tools(),
            *self.media.tools(),
            *(job_tools(self.jobs, self.access.is_admin_account) if self.jobs is not None else []),
        ]
        self.memory = MemoryService(
            self.settings.memory,
            self.store,
            history_limit=self.settings.store.history_limit,
            context_chars=self.settings.store.context_chars,
            memories=self.repos.memories,
            scrub=self.repos.scrub,
            summary_model=self.models.summariser(self.settings.memory.summary.model),
            embedder=self.models.embedder(embedding) if (embedding := self.settings.memory.embeddings.model) else None,
            flush_traces=self.tracing.flush,
        )

    def _build_runs(self) -> None:
        """Agents, routing, MCP, budgets, the run manager and the interrupts."""
        self.catalog = AgentCatalog.load(self.settings.agents, self.settings.plan)
        warn_unknown_references(
            self.catalog,
            {t.name for t in [*self.tools, *self.memory.tools()]} | {SESSION_TOOL},
            set(self.settings.mcp.servers),
        )
        self.router = Router.configured(self.catalog.targets(), self.models, self.settings.routing)
        self.routes = RoutePolicy(
            self.settings.routing,
            self.store,
            self.catalog,
            self.router,
            route_chars=self.settings.limits.route_chars,
            origin=self.settings.origin,
            load_agents=lambda: AgentCatalog.load(self.settings.agents, self.settings.plan),
        )
        self.mcp = McpPool(self.settings.mcp.servers, self.delivery.send, self.clock)
        self.tool_pool = ToolPool(self.tools, self.mcp)
        """Every tool an agent could be offered: built-in, gateway and its MCP servers' (connected lazily)."""
        self.budgets = (
            Budgets(self.settings.budgets, self.repos.usage, clock=self.clock, refused=self.metrics.budget_refused)
            if self.settings.budgets.enabled
            else None
        )
        self.timers = ExpiryTimers(self.clock)
        s = self.settings
        self.manager = RunManager(
            config=RunConfig(
                handoffs=s.handoffs,
                interrupts=s.interrupts,
                channels=s.channels,
                store=s.store,
                media=s.media,
                model=s.model,
                memory=s.memory,
            ),
            store=self.store,
            runs=self.runs,
            catalog=self.catalog,
            model=self.model,
            models=self.models,
            delivery=self.delivery,
            timers=self.timers,
            tools=self.tool_pool,
            tracing=self.tracing,
            memory=self.memory,
            budgets=self.budgets,
            metrics=self.metrics,
            text_limits={
                **{name: PLUGINS[name].text_limit for name in self.settings.channels.enabled()},
                **{c.name: c.text_limit if isinstance(c, LimitsText) else None for c in self.channels},
            },
            prints_as_written=frozenset(
                c.name for c in self.channels if isinstance(c, PrintsAsWritten) and c.prints_as_written
            ),
            clock=self.clock,
        )
        self.interrupts = InterruptService(
            self.runs,
            self.manager,
            self.delivery,
            self.timers,
            self.fences,
            self.handled.handled if self.handled else None,
        )

    def _build_commands(self) -> None:
        """The command registry and every command module's registration."""
        self.commands = CommandRegistry()
        context = CommandContext(
            settings=self.settings,
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

    def _build_handling(self, progress: Progress | None) -> None:
        """The handling side (:mod:`bot.gateway.handling`: the supervisor and its pipeline, the durable inbox,
        channel start-up, the scaled-out parts, health and metrics), then the web console (served by :meth:`start`)."""
        handling = build_handling(self, progress)
        self.supervisor, self.inbox, self.starter = handling.supervisor, handling.inbox, handling.starter
        self.scale, self.ops = handling.scale, handling.ops
        self.http: HttpServer | None = None
        self.web = build_console(self, self.inbox.submit) if self.settings.web.enabled else None
        self.recovery: RecoveryReport | None = None
        self._started = False

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

    def health(self) -> dict[str, Any]:
        report = {
            "status": status_of(self._started, bool(self.channels), bool(self.starter.degraded), self.role),
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
            self.http = HttpServer(self.settings.http.host, self.settings.http.port, self.health, clock=self.clock)
            self.ops.mount(self.http)
            if self.web is not None:
                self.web.mount(self.http)
            for channel in webhooks:
                channel.mount(self.http)
            await self.http.start()
            announce_console(self)
        if not self.channels and self.role != "worker":
            log.warning("no channel is enabled: nobody can reach this bot (enable one under channels.*)")
        if self.scale is None:
            await self.starter.start_all()
        elif self.scale.receives:
            await self.scale.start_receiving(self.channels)
        # A terminal keeps no messages across a restart: a pending prompt is shown there again, with its buttons.
        await self.interrupts.show_all_again(
            {c.name for c in self.channels if isinstance(c, ForgetsMessages) and c.forgets_messages}
        )
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
