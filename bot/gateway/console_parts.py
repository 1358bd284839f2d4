"""The web console as the composition root builds it (``web.enabled``), from the parts of a built gateway."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from agents.tools.base import Tool
from bot.clock import Clock
from bot.config.media import MediaSection
from bot.config.settings import ChannelsSection, StoreSection
from bot.config.web import WebSection
from bot.delivery import Delivery
from bot.gateway.ops import OpsEndpoints
from bot.gateway.settled import HandledEvents
from bot.jobs.service import JobService
from bot.memory.service import MemoryService
from bot.ops.budgets import Budgets
from bot.ops.metrics import Metrics
from bot.pairing import Pairing, PairingDesk
from bot.routing.policy import RoutePolicy
from bot.runs.context import ToolPool
from bot.store.ports import ChatStore, Repos, Runs
from bot.tracing.recorder import Tracing
from bot.web.actions import ConsoleActions, Submit
from bot.web.auth import Sessions
from bot.web.chat_page import ChatChannel, Talk
from bot.web.console import WebConsole
from bot.web.data import ConsoleData
from bot.web.health import HealthView
from channels.base import Channel
from channels.web.files import UPLOADS
from channels.web.settings import WebChatSettings

log = logging.getLogger(__name__)


class ConsoleSettings(Protocol):
    """The sections of the settings the console reads (:class:`~bot.config.settings.Settings` has them)."""

    @property
    def web(self) -> WebSection: ...

    @property
    def channels(self) -> ChannelsSection: ...

    @property
    def store(self) -> StoreSection: ...

    @property
    def media(self) -> MediaSection: ...


class ConsoleHost(Protocol):
    """What the console uses of the gateway it is built in (every part is built before it)."""

    @property
    def settings(self) -> ConsoleSettings: ...

    clock: Clock
    tracing: Tracing
    routes: RoutePolicy
    metrics: Metrics
    ops: OpsEndpoints
    tools: list[Tool]
    memory: MemoryService
    budgets: Budgets | None
    jobs: JobService | None
    pairing: Pairing
    delivery: Delivery
    handled: HandledEvents | None
    channels: list[Channel]

    @property
    def store(self) -> ChatStore: ...

    @property
    def repos(self) -> Repos[Any]: ...

    @property
    def runs(self) -> Runs: ...

    def health(self) -> dict[str, Any]: ...

    tool_pool: ToolPool


def build_console(g: ConsoleHost, submit: Submit) -> WebConsole:
    """The web console; its presses enter through ``submit`` (the inbox's) like a platform's."""

    async def tools_of(agent_name: str) -> Sequence[Tool]:
        agent = g.routes.catalog.get(agent_name)
        return await g.tool_pool.tools(agent) if agent is not None else g.tools

    async def pair(code: str, actor: str) -> str:
        approval = await g.pairing.approve(code, actor)
        if approval.tell is not None:
            await g.delivery.send(approval.tell)
        return approval.reply

    catalog: Callable[[], Any] = lambda: g.routes.catalog  # noqa: E731 (read when shown: /reload swaps it)
    health = HealthView(
        status=g.health,
        sample=g.ops.sample,
        metrics=g.metrics,
        catalog=catalog,
        tools=[*g.tools, *g.memory.tools()],
        budgets=g.budgets,
        jobs=g.jobs.jobs if g.jobs is not None else None,
    )
    return WebConsole(
        g.settings.web,
        data=ConsoleData(g.repos.console, g.runs, g.tracing, g.routes, g.repos.evals),
        actions=ConsoleActions(g.store, g.runs, submit, tools_of, handled=g.handled, clock=g.clock),
        sessions=Sessions(g.settings.web, g.repos.web_sessions, g.clock),
        health=health,
        clock=g.clock,
        pairing=PairingDesk(g.pairing.store.waiting, pair),
        talk=chat_parts(g),
    )


def chat_parts(g: ConsoleHost) -> Talk | None:
    """The Chat page's parts when the ``web`` channel runs here (its adapter is the page's way in)."""
    channel = next((c for c in g.channels if c.name == "web"), None)
    if channel is None:
        return None
    section = cast(WebChatSettings, g.settings.channels.section("web"))
    uploads = g.settings.store.data_dir.expanduser() / UPLOADS
    cap = int(section.max_upload_mb * 1024 * 1024)
    return Talk(cast(ChatChannel, channel), uploads, cap, section.keep_messages, g.settings.media.keep_hours)


def console_line(web: WebSection, host: str, port: int) -> str:
    """Where the console is and how to sign in (never the token itself): ``web console: http://…/web (…)``."""
    shown = "localhost" if host in ("", "0.0.0.0", "::") else f"[{host}]" if ":" in host else host
    names = [u.name for u in web.users]
    how = []
    if names:
        how.append(f"as {' or '.join(names) if len(names) <= 3 else ', '.join(names[:3]) + ', …'} (web.users)")
    if web.token:
        how.append("with the admin token (BOT_WEB__TOKEN)")
    everywhere = f"; listening on every address ({host or '*'})" if shown == "localhost" else ""
    return f"web console: http://{shown}:{port}{web.path} (sign in {', or '.join(how)}{everywhere})"


def announce_console(g: Any) -> None:
    """Once the HTTP server listens: the console's address, printed at start and logged (a gateway without the
    console says nothing)."""
    if g.web is not None and g.http is not None:
        line = console_line(g.settings.web, g.http.host, g.http.port)
        log.info("%s", line)
        g.progress(line)
