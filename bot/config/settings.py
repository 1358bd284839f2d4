"""Layered configuration.

Layers, lowest first: built-in defaults (package data, so a non-editable
install works) < ``~/.config/bot/bot.yaml`` < the project file
(``config/bot.yaml`` or ``--config``) < the environment
(``BOT_<SECTION>__<KEY>``, plus the shorthands ``GEMINI_API_KEY``, ``GEMINI_BASE_URL``, ``DATABASE_URL`` and
``REDIS_URL``).  Per-chat and per-message overrides live in the store and are applied by the gateway.

Strings may use ``${VAR}`` or ``${VAR:-default}``; an unset variable without
a default is an error naming the file and field (:mod:`bot.config.checks`), and
an enabled section that lacks a required secret is reported by name.  Every leaf remembers the layer it came
from (``Settings.origin``) so ``/routing`` and ``bot config show`` can say why a value is what it is.

This module assembles :class:`Settings` and loads it; the sections are defined by area in their own modules
(:mod:`bot.config.process`, :mod:`~bot.config.storage`, :mod:`~bot.config.limits`, :mod:`~bot.config.routing`,
:mod:`~bot.config.runs`, :mod:`~bot.config.tracing`, :mod:`~bot.config.model`, :mod:`~bot.config.ops`, ...) and
the ones the code imports from here stay importable from here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agents.tools.config import ToolsConfig
from agents.tools.mcp.config import McpConfig, McpServerConfig
from bot.config.channels import Channels, channels_model
from bot.config.channels import ChannelSection as ChannelSection  # re-exported: the gateway types on it
from bot.config.checks import bus_url_problem, interpolate, literal_secrets, store_url_problem
from bot.config.envfiles import EnvFiles, with_env_files
from bot.config.explain import explain
from bot.config.jobs import JobsSection
from bot.config.layers import env_layers, merge, read_yaml
from bot.config.limits import LimitsSection as LimitsSection
from bot.config.media import MediaSection
from bot.config.memory import MemorySection
from bot.config.model import ModelSection
from bot.config.ops import BudgetsSection, HttpSection, MetricsSection
from bot.config.pairing import PairingSection
from bot.config.paths import anchor_paths, project_config, project_dir
from bot.config.process import BotSection as BotSection
from bot.config.process import LogSection as LogSection
from bot.config.process import RuntimeSection as RuntimeSection
from bot.config.routing import LlmRouting as LlmRouting
from bot.config.routing import RoutingSection as RoutingSection
from bot.config.routing import RuleRouting as RuleRouting
from bot.config.routing import Share as Share
from bot.config.runs import AgentsSection as AgentsSection
from bot.config.runs import HandoffsSection as HandoffsSection
from bot.config.runs import InterruptsSection as InterruptsSection
from bot.config.runs import PlanSection as PlanSection
from bot.config.runs import StepsOver as StepsOver
from bot.config.secrets import SECRET_KEYS, redact, walk
from bot.config.storage import BusSection as BusSection
from bot.config.storage import StoreSection as StoreSection
from bot.config.tracing import OtelSection as OtelSection
from bot.config.tracing import TraceEventType as TraceEventType
from bot.config.tracing import TracingSection as TracingSection
from bot.config.web import WebSection
from bot.errors import ConfigError

USER_CONFIG = Path("~/.config/bot/bot.yaml")
PROJECT_CONFIG = Path("config/bot.yaml")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


McpServer = McpServerConfig
"""One MCP server (``mcp.servers.<name>``); defined and documented in :mod:`agents.tools.mcp.config`."""


class McpSection(McpConfig):
    """``mcp``: ``servers`` by name (letters, digits, ``_``, ``-``); their tools are ``mcp.<name>.<tool>``."""


ChannelsSection = Channels
"""``channels``: one section per registered channel; :func:`settings_model` adds the registered channels'."""


class Settings(_Section):
    """The effective configuration after every layer was applied."""

    bot: BotSection = Field(default_factory=BotSection)
    log: LogSection = Field(default_factory=LogSection)
    model: ModelSection = Field(default_factory=ModelSection)
    store: StoreSection = Field(default_factory=StoreSection)
    bus: BusSection = Field(default_factory=BusSection)
    limits: LimitsSection = Field(default_factory=LimitsSection)
    runtime: RuntimeSection = Field(default_factory=RuntimeSection)
    http: HttpSection = Field(default_factory=HttpSection)
    agents: AgentsSection = Field(default_factory=AgentsSection)
    routing: RoutingSection = Field(default_factory=RoutingSection)
    interrupts: InterruptsSection = Field(default_factory=InterruptsSection)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    plan: PlanSection = Field(default_factory=PlanSection)
    handoffs: HandoffsSection = Field(default_factory=HandoffsSection)
    tracing: TracingSection = Field(default_factory=TracingSection)
    mcp: McpSection = Field(default_factory=McpSection)
    channels: ChannelsSection = Field(default_factory=ChannelsSection)
    media: MediaSection = Field(default_factory=MediaSection)
    memory: MemorySection = Field(default_factory=MemorySection)
    metrics: MetricsSection = Field(default_factory=MetricsSection)
    budgets: BudgetsSection = Field(default_factory=BudgetsSection)
    jobs: JobsSection = Field(default_factory=JobsSection)
    web: WebSection = Field(default_factory=WebSection)
    pairing: PairingSection = Field(default_factory=PairingSection)

    _origins: dict[str, str] = {}
    _warnings: list[str] = []
    _env_files: EnvFiles | None = None
    _project: Path | None = None

    @property
    def project_file(self) -> Path | None:
        """The project file these settings read (``--config``, or the project's ``config/bot.yaml``), None when
        there was none."""
        return self._project

    @property
    def env_files(self) -> EnvFiles | None:
        """The ``.env`` files read for these settings (None: an environment was given, no file was read)."""
        return self._env_files

    @property
    def warnings(self) -> list[str]:
        """What loading noticed and the operator should hear about at start-up (a secret written in a file)."""
        return list(self._warnings)

    def origin(self, dotted: str) -> str:
        """The layer that set ``dotted`` (e.g. ``model.name``), or ``default``."""
        return _origin(self._origins, dotted)

    def secrets(self) -> set[str]:
        """Every configured secret value (for the log filter and redaction)."""
        found: set[str] = set()
        for path, value in walk(self.model_dump(mode="json")):
            secret_path = any(p in SECRET_KEYS for p in path)
            if secret_path and isinstance(value, str) and len(value) >= 4:
                found.add(value)
        for url in (self.store.url or "", self.bus.url or ""):
            match = re.match(r"^[a-z+]+://[^:/@]*:([^@]+)@", url)
            if match and len(match.group(1)) >= 4:
                found.add(match.group(1))
        return found

    def redacted(self) -> dict[str, Any]:
        """The configuration as plain data with every secret replaced."""
        return redact(self.model_dump(mode="json"))


def missing_config(config: Path) -> str:
    """What to say of a ``--config`` that names no file."""
    return f"{config}: config file not found ({os.path.abspath(config)} does not exist); `bot init` writes one"


def builtin_defaults_path() -> Path:
    return Path(str(resources.files("bot") / "defaults" / "bot.yaml"))


def load_settings(
    config: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    require_secrets: bool = True,
) -> Settings:
    """Read every layer and validate the result (``require_secrets``: every enabled channel's secrets set).

    ``config`` is the project file; without it ``$BOT_HOME/config/bot.yaml``, else the first ``config/bot.yaml``
    from the working directory up (:func:`~bot.config.paths.project_config`).  A ``--config`` that does not exist
    is an error.  ``env`` None: the process environment over the ``.env`` files
    (:mod:`bot.config.envfiles`); given, exactly that.  Relative paths follow the file that set them
    (:mod:`bot.config.paths`).
    """
    if config is not None and not config.is_file():
        raise ConfigError(missing_config(config))
    project = config if config is not None else project_config(os.environ if env is None else env)
    files: EnvFiles | None = None
    if env is None:
        env, files = with_env_files(project)
    layers: list[tuple[str, Path | None, Mapping[str, Any]]] = []
    defaults = builtin_defaults_path()
    layers.append(("default", defaults, read_yaml(defaults)))
    user = (user_config or USER_CONFIG).expanduser()
    if user.is_file():
        layers.append((f"user file {user}", user, read_yaml(user)))
    if project is not None:
        layers.append((f"project file {project}", project, read_yaml(project)))
    layers.extend((name, None, data) for name, data in env_layers(env).items())
    if overrides:
        layers.append(("override", None, overrides))

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    unset: list[str] = []
    warnings: list[str] = []
    for name, path, data in layers:
        if path is not None and name != "default":
            warnings += [
                f"{name}: {key} is written in the file; secrets belong in the environment "
                f"(write {key.rsplit('.', 1)[-1]}: ${{VARIABLE}} and export VARIABLE)"
                for key in literal_secrets(data, SECRET_KEYS)
            ]
        merge(merged, interpolate(data, env, unset, name), name, origins)
    if unset:
        where = files.where() if files is not None else "not read: the environment was given"
        hint = f"set it: export it, or write it in a .env file (.env files: {where})"
        raise ConfigError("invalid configuration:\n  " + "\n  ".join([*unset, hint]))
    if project is not None:
        bases = {f"project file {project}": project_dir(project), "default": project_dir(project)}
        if user.is_file():
            bases[f"user file {user}"] = user.parent
        anchor_paths(merged, lambda dotted: _origin(origins, dotted), bases)
    tools = merged.setdefault("tools", {})
    if isinstance(tools, dict) and tools.get("workspace") is None:
        # Beside the database, in the data dir (a Docker volume), not wherever the process was started.
        tools["workspace"] = str(Path(str((merged.get("store") or {}).get("data_dir") or "data")) / "workspace")
    try:
        model = settings_model()
        settings = model.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(explain(exc, lambda dotted: _origin(origins, dotted), model)) from None
    settings._origins = {k: v for k, v in origins.items() if v != "default"}
    settings._warnings = warnings
    settings._env_files = files
    settings._project = project.absolute() if project is not None else None
    problem = store_url_problem(settings.store.url)
    if problem is not None:
        raise ConfigError(f"invalid configuration:\n  {settings.origin('store.url')}: store.url: {problem}")
    problem = bus_url_problem(settings.bus.url, settings.store.url)
    if problem is not None:
        raise ConfigError(f"invalid configuration:\n  {settings.origin('bus.url')}: bus.url: {problem}")
    admins = settings.channels.admins_problem()
    if admins is not None:
        raise ConfigError(f"invalid configuration:\n  {settings.origin(admins[0])}: {admins[0]}: {admins[1]}")
    if require_secrets:
        _check_required_secrets(settings)
    return settings


_with_channels: dict[type[Channels], type[Settings]] = {}


def settings_model() -> type[Settings]:
    """A subclass of :class:`Settings` whose ``channels`` has the sections of the channels registered now (the
    registry the composition root installed: :mod:`bot.config.channels`)."""
    current = channels_model()
    if current not in _with_channels:
        _with_channels[current] = create_model(
            "Settings", __base__=Settings, channels=(current, Field(default_factory=current))
        )
    return _with_channels[current]


def _origin(origins: dict[str, str], dotted: str) -> str:
    """The layer that set ``dotted`` or the nearest section above it (``default`` when none did)."""
    probe = dotted
    while probe:
        if probe in origins:
            return origins[probe]
        probe = probe.rpartition(".")[0]
    return "default"


def _check_required_secrets(settings: Settings) -> None:
    problems = []
    for name in settings.channels.enabled():
        problems += settings.channels.section(name).problems()
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
