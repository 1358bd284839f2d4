"""Building blocks the composition root (:mod:`bot.gateway.app`) puts together: the model, the built-in tools,
the channel adapters, and a check of what agent files name."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from agents.models.base import Model
from agents.tools.base import Tool
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.own import WORKSPACE_FIX, own_paths, workspace_problem
from bot.config.settings import ConfigError, Settings
from bot.delivery import Delivery
from bot.media.fetch import FetcherLoader
from bot.media.service import MediaService
from bot.models import ModelCatalog
from bot.runs.catalog import AgentCatalog
from channels.base import BuildContext, Channel
from channels.registry import PLUGINS

log = logging.getLogger(__name__)


def build_model(settings: Settings) -> Model:
    """The main model (with its fallbacks): Gemini when its key is set, OpenAI-compatible when configured,
    else the labelled offline model."""
    return ModelCatalog(
        settings.model, timezone=settings.jobs.timezone, inline_max_mb=settings.media.inline_max_mb
    ).main


def builtin_tools(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> list[Tool]:
    """The built-in toolset, configured by the ``tools`` section: the file tools refuse the bot's own files and
    ``run_command``'s sandbox masks them.  A workspace that holds them is refused (:class:`ConfigError`).
    ``clock``: the gateway's (``get_current_time`` tells its time)."""
    from agents.tools import builtin_toolset
    from agents.tools.sandbox import SandboxUnavailable

    problem = workspace_problem(settings)
    if problem is not None:
        raise ConfigError(f"{problem}; {WORKSPACE_FIX}")
    try:
        return list(builtin_toolset(settings.tools, hidden=own_files(settings), clock=clock).tools)
    except SandboxUnavailable as exc:
        raise ConfigError(f"tools.run_command.sandbox is bwrap, but {exc}") from None


def own_files(settings: Settings) -> list[Path]:
    """What no tool may see: the data dir (database), configuration files, ``.env`` files, agent files."""
    return [own.path for own in own_paths(settings)]


def warn_unknown_references(catalog: AgentCatalog, tools: set[str], mcp_servers: set[str]) -> None:
    """Log what an agent file names that does not exist here (a misspelt tool in ``tools.allow`` would
    otherwise just never be offered); the agent still loads."""
    from agents.spec import check_references
    from bot.runs.tool_names import known_tool_names

    known = tools | known_tool_names()
    for agent in catalog.agents.values():
        if agent.spec is None:
            continue
        for problem in check_references(agent.spec, catalog.agents, known, mcp_servers):
            log.warning("agent %s: %s", agent.name, problem)


def status_of(started: bool, channels: bool, degraded: bool, role: str) -> str:
    """The gateway's health status: starting, no channels, degraded or ok (a worker, which has no channels: ok
    once started)."""
    if not started:
        return "starting"
    if role == "worker" or not channels:
        return "ok" if role == "worker" else "no channels"
    return "degraded" if degraded else "ok"


def build_channels(
    settings: Settings,
    join: Callable[[], Awaitable[None]] | None = None,
    rate_limited: Callable[[str], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    started: Callable[[], Awaitable[object]] | None = None,
) -> list[Channel]:
    """An adapter for every enabled channel section, from its plugin (platform libraries load only then)."""
    context = BuildContext(settled=join, rate_limited=rate_limited, clock=clock, started=started)
    return [PLUGINS[name].build(settings.channels.section(name), context) for name in settings.channels.enabled()]


def build_media(settings: Settings, model: Model, delivery: Delivery, clock: Clock) -> MediaService:
    """The media service, given the sections it reads: ``media``, the enabled channels', ``store.data_dir``,
    ``tools.workspace`` and the bot's own files (which ``send_file`` refuses)."""
    return MediaService(
        settings.media,
        model,
        delivery,
        clock,
        media_fetchers(),
        channels={name: settings.channels.section(name) for name in settings.channels.enabled()},
        data_dir=settings.store.data_dir,
        workspace=Path(settings.tools.workspace),
        hidden=own_files(settings),
    )


def media_fetchers() -> dict[str, FetcherLoader]:
    """Each registered channel's fetcher factory, for the media service (imported when its first file comes)."""
    return {name: plugin.load_fetcher for name, plugin in PLUGINS.items() if plugin.fetcher is not None}
