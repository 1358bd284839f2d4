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
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model, model_validator

from agents.tools.config import ToolsConfig
from agents.tools.mcp.config import McpConfig, McpServerConfig
from bot.config.channels import Channels, channels_model
from bot.config.channels import ChannelSection as ChannelSection  # re-exported: the gateway types on it
from bot.config.checks import bus_url_problem, interpolate, literal_secrets, store_url_problem
from bot.config.envfiles import EnvFiles, with_env_files
from bot.config.explain import explain
from bot.config.jobs import JobsSection
from bot.config.layers import env_layers, merge, read_yaml
from bot.config.media import MediaSection
from bot.config.memory import MemorySection
from bot.config.model import ModelSection
from bot.config.ops import BudgetsSection, HttpSection, MetricsSection
from bot.config.pairing import PairingSection
from bot.config.paths import anchor_paths, project_config, project_dir
from bot.config.secrets import SECRET_KEYS, redact, walk
from bot.config.web import WebSection
from bot.errors import ConfigError

USER_CONFIG = Path("~/.config/bot/bot.yaml")
PROJECT_CONFIG = Path("config/bot.yaml")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BotSection(_Section):
    name: str = "bot"
    greeting: str = ""


class LogSection(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"  # json: one object per line, with the request's correlation id


class StoreSection(_Section):
    url: str | None = None
    data_dir: Path = Path("data")
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    busy_timeout_ms: int = Field(5000, ge=0)
    history_limit: int = Field(200, ge=1)
    context_chars: int = Field(24000, ge=100)
    processed_ids_limit: int = Field(100000, ge=100)
    cache_chats: int = Field(1000, ge=1)
    """Chats whose recent history and settings stay in memory (least recently used go first)."""
    max_batch: int = Field(256, ge=1)
    """Most writes committed in one transaction (group commit)."""
    retention_interval_s: float = Field(5.0, gt=0)
    """How often the writer prunes history and processed ids beyond their limits."""
    runs_retention_days: float = Field(30, gt=0)
    """Finished runs, with their interrupts and tool ledger, are deleted this many days after they ended."""
    audit_retention_days: float = Field(365, gt=0)
    """Admin changes (the audit log) are kept this many days."""

    def database_url(self) -> str:
        if self.url:
            return self.url
        return f"sqlite:///{self.data_dir.expanduser() / 'bot.db'}"


class BusSection(_Section):
    url: str | None = None
    """``redis://host:port/db``: inbound events and outbound messages go through Redis Streams, so gateways and
    workers may be separate processes (``bot run --role``); absent: the in-process bus (one process)."""
    partitions: int = Field(64, ge=1, le=4096)
    """Inbound partition streams (a chat's events all go to ``crc32(chat_key) % partitions``)."""
    lease_ms: int = Field(10000, ge=500)
    """How long a worker's claim on a partition (and a gateway's on an exclusive connection) lasts unrenewed:
    the time for a dead worker's chats to move to another. Renewed every third of it."""
    stream_maxlen: int = Field(100000, ge=1000)
    """Entries kept per stream (approximately); handled entries are acknowledged long before."""
    sweep_s: float = Field(60.0, gt=0)
    """How often a gateway republishes events committed to the inbox but older than twice this and still
    unhandled (Redis lost them); handling stays exactly once (the inbox row)."""
    max_concurrent_chats: int = Field(64, ge=1)
    max_pending: int = Field(10000, ge=1)


class LimitsSection(_Section):
    """What one chat, sender or message may cost (the intake and routing enforce them)."""

    max_text_chars: int = Field(100_000, ge=100)
    """Longer inbound texts are refused with a clear notice (nothing is stored)."""
    route_chars: int = Field(16_384, ge=100)
    """Routing reads this prefix of a long message (the agent still gets all of it)."""
    chat_queue_notice: int = Field(20, ge=1)
    """A chat with this many messages waiting gets one "slow down" notice."""
    chat_queue_max: int = Field(100, ge=1)
    """Past this many waiting, a chat's newest messages are refused (with a notice) instead of queued."""
    sender_rate_per_min: float = Field(30, ge=0)
    """Messages a sender may send per minute on average (token bucket; admins exempt; 0 = no limit)."""
    sender_burst: int = Field(20, ge=1)
    """Messages a sender may send at once before the rate applies."""
    notice_interval_s: float = Field(60, gt=0)
    """At most one "too many"/"too fast" notice per chat or sender in this many seconds."""
    unknown_sender_reply_s: float = Field(3600, ge=0)
    """At most one "you are not allowed" reply per unknown sender in this many seconds."""

    @model_validator(mode="after")
    def _bounds(self) -> LimitsSection:
        if self.chat_queue_notice > self.chat_queue_max:
            raise ValueError("chat_queue_notice must not exceed chat_queue_max")
        return self


class RuntimeSection(_Section):
    """The Python process of ``bot run`` / ``bot chat`` (an embedded gateway, e.g. in tests, leaves it alone)."""

    gc_threshold: int = Field(10_000, ge=0)
    """Tracked allocations between young-generation collections; 0 keeps Python's default (700).

    Every message allocates thousands of short-lived objects; at 700 the collector ran hundreds of times per second
    and its full passes paused the loop (see bench/README.md, "The garbage collector")."""
    gc_freeze: bool = True
    """After start-up, move what is loaded (modules, schemas, agents, tools) out of the collector's scans."""
    switch_interval_ms: float = Field(0.2, ge=0)
    """How long a thread that wants the GIL waits before the running one must hand it over; 0 keeps Python's
    (5 ms).  The store's committer thread needs the GIL after each fsync, while the event loop runs Python
    without pause: at 5 ms the committed batch waited for it, and so did every message in that batch (see
    :mod:`bot.gateway.runtime`, and bench/README.md, "The switch interval")."""


class AgentsSection(_Section):
    dirs: list[Path] = Field(default_factory=lambda: [Path("config/agents")])
    user_dir: Path = Path("~/.config/bot/agents")


def _share(value: Any) -> Any:
    # A confidence is a share, 0-1; a percentage (80, as configurations before wave 4 wrote it) is read as one.
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 1:
        return value / 100
    return value


Share = Annotated[float, BeforeValidator(_share), Field(ge=0, le=1)]


class RuleRouting(_Section):
    confidence_threshold: Share = 0.8
    """hybrid: an offline decision at least this sure (0-1) stands; below it, the model is asked."""
    meaning: bool = True
    """Route by meaning too (a local sentence encoder, loaded on a thread at start: the agents' descriptions,
    examples and corrections, in any language); false: triggers and the classifier only."""
    encoder: str = "use"
    """The sentence encoder: ``use`` (the multilingual Universal Sentence Encoder shipped in a wheel)."""
    agent_min_score: float = Field(20, ge=0)
    """Without the encoder: what a file agent's triggers must score (a pattern 20, a keyword 10, whatever the
    priority) to beat the built-ins."""
    agent_margin: float = Field(10, ge=0)
    """...and this much more than the next file agent's."""
    learned: bool = True
    """chat / react / plan chosen by the shipped classifier (false: by their trigger keywords)."""
    min_confidence: Share = 0.65
    """Below this share the classifiers have not recognised the message (gibberish scores about 0.6): the rules
    decide nothing, and ``routing.fallback`` (or, in hybrid, the model) takes over."""
    strong_priority: int = Field(80, ge=0, le=100)  # without the encoder: a file agent at this priority wins on one
    classifier_sure: Share = 0.99  # match unless the classifier is this sure (0-1); 0 turns it off


class LlmRouting(_Section):
    model: str = ""
    """Model name for the router ('' = the main model)."""
    timeout_ms: int = Field(5000, ge=1)


class RoutingSection(_Section):
    enabled: bool = True
    strategy: Literal["rule", "llm", "hybrid"] = "hybrid"
    rule: RuleRouting = Field(default_factory=RuleRouting)
    llm: LlmRouting = Field(default_factory=LlmRouting)
    fallback: Literal["none", "prompt_user", "default_agent"] = "default_agent"
    default_agent: str = "chat"
    notify: bool | Literal["agents"] = "agents"
    """A "🤖 Auto-routing to: X (matched: bug)" line: ``agents`` (to a file agent), ``true`` (always), ``false``."""


class InterruptsSection(_Section):
    """How long a pause waits for a human before it expires (seconds, per kind)."""

    tool_confirm_timeout_s: float = Field(3600, gt=0)
    plan_approval_timeout_s: float = Field(86400, gt=0)
    ask_user_timeout_s: float = Field(86400, gt=0)

    def timeout_for(self, kind: str) -> float:
        return float(getattr(self, f"{kind}_timeout_s", self.tool_confirm_timeout_s))


class StepsOver(_Section):
    if_steps_over: int = Field(ge=0)


class PlanSection(_Section):
    """The Plan-Execute-Replan runner."""

    approval: Literal["always", "never"] | StepsOver = "always"
    max_steps: int = Field(10, ge=1, le=50)
    progress: bool = True
    """Send a line per completed step."""

    def approval_rule(self) -> Literal["always", "never"] | int:
        return self.approval if isinstance(self.approval, str) else self.approval.if_steps_over


class HandoffsSection(_Section):
    """Agent-to-agent handoffs (``transfer_to_<agent>`` tools)."""

    max_depth: int = Field(5, ge=1, le=20)
    """Handoffs allowed in one run."""
    notify: str = "🔀 {from} → {to}: {reason}"
    """The line shown to the user at a handoff ({from}, {to}, {reason}); empty: say nothing."""
    context_messages: int = Field(10, ge=0, le=100)
    """How many recent messages a handoff with ``include_context`` passes on."""


TraceEventType = Literal[
    "route", "llm_call", "tool_call", "handoff", "guardrail", "interrupt", "error", "run", "memory", "summary"
]


class OtelSection(_Section):
    enabled: bool = False
    """Export trace events as OpenTelemetry spans (needs ``pip install opentelemetry-sdk``)."""
    endpoint: str = ""
    """OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces (needs the OTLP exporter package)."""
    service_name: str = "supervisor-bot"


class TracingSection(_Section):
    """Trace events of every run (``/trace``, ``bot trace``)."""

    enabled: bool = True
    retention_days: float = Field(14, gt=0)
    flush_interval_s: float = Field(0.5, gt=0)
    """Buffered events are written at least this often (one group commit for all of them)."""
    max_buffer: int = Field(64, ge=1)
    """Write earlier when this many events are waiting (small writes keep each one from stalling the loop; see
    bench/README.md, "Trace events written in small batches")."""
    sample_rate: float = Field(1.0, ge=0, le=1)
    """The share of requests traced (decided per request, so a request is traced whole or not at all);
    errors are always kept."""
    events: list[TraceEventType] = Field(default_factory=list)
    """Only these kinds of event are kept (empty: all); errors are always kept."""
    otel: OtelSection = Field(default_factory=OtelSection)


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
