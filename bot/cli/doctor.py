"""``bot doctor``: is this setup right? One line per check, ✓ or ✗, and for each ✗ the fix.

Checks, in order: the configuration (every layer, secrets written in files), the channels (their secrets,
each platform's answer to its token: ``getMe``, ``auth.test`` and the app token, a Discord login; webhook
settings), the HTTP server's port, the database (reachable, migrations current), Redis when configured, the
tools' workspace (it must not hold the bot's own files), the models (a 1-token call to the main model and each
fallback, the router's, the summariser's; an embedding of one word), the MCP servers (started, their tools
listed) and the agent files. Exit 0 when all pass, 1 when any fails. Network checks are bounded by
``--timeout`` each; nothing is changed anywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from agents.messages import Message
from agents.models.base import Generation, ModelError, ModelUnavailable
from bot.access import LOCAL_CHANNELS
from bot.config.own import WORKSPACE_FIX, workspace_path, workspace_problem
from bot.config.paths import HOME_VARIABLE, project_dir
from bot.config.settings import PROJECT_CONFIG, USER_CONFIG, ConfigError, Settings, load_settings
from bot.models import ModelCatalog, parse_spec
from bot.store.sql.migrate import current_revision, head_revision
from bot.store.sql.probe import postgres_reachable
from channels.registry import PLUGINS

OK, WARN, FAIL = "✓", "!", "✗"


@dataclass(frozen=True)
class Line:
    ok: bool
    what: str
    fix: str = ""
    warn: bool = False
    """Passed, but worth a look (shown with ``!``; the exit code stays 0)."""

    @property
    def status(self) -> str:
        return "fail" if not self.ok else "warn" if self.warn else "ok"

    def render(self) -> str:
        head = f"{FAIL if not self.ok else WARN if self.warn else OK} {self.what}"
        return head if self.status == "ok" or not self.fix else f"{head}\n    fix: {self.fix}"

    def as_dict(self) -> dict[str, str]:
        """``{"name", "status", "detail", "fix"}``: the name is the line's subject (``telegram token``)."""
        name, sep, detail = self.what.partition(": ")
        return {"name": name if sep else self.what, "status": self.status, "detail": detail, "fix": self.fix}


def report(lines: list[Line], *, as_json: bool = False, fixed: list[str] | None = None) -> tuple[str, int]:
    """What ``bot doctor`` prints and its exit code (1 when any check failed): what ``--fix`` did, one line per
    check and a total, or with ``as_json`` one JSON object (``ok``, the counts, ``fixed``, ``checks``) for CI."""
    failed = sum(line.status == "fail" for line in lines)
    warned = sum(line.status == "warn" for line in lines)
    code = 1 if failed else 0
    if as_json:
        body = {"ok": not failed, "passed": len(lines) - failed, "failed": failed, "warnings": warned,
                "fixed": fixed or [], "checks": [line.as_dict() for line in lines]}  # fmt: skip
        return json.dumps(body, ensure_ascii=False, indent=2), code
    out = [*(fixed or []), *(line.render() for line in lines)]
    out.append(f"{len(lines) - failed} passed, {failed} failed." if failed else f"All {len(lines)} checks passed.")
    return "\n".join(out), code


Check = Callable[[Settings], Awaitable[list[Line]]]


async def diagnose(config: Path | None, timeout_s: float = 10.0, env: dict[str, str] | None = None) -> list[Line]:
    """Every check's lines; a configuration that does not load stops there (the rest needs it)."""
    try:
        settings = load_settings(config, env=env, require_secrets=False)
    except ConfigError as exc:
        return [Line(False, f"config: {exc}", _config_fix(str(exc), config or PROJECT_CONFIG))]
    files = settings.env_files
    if env is None:
        env = {**(files.values if files is not None else {}), **os.environ}
    lines = [_project(settings, config, env), _layers(settings, config, env)]
    lines += [Line(False, f"config: {w}", "move the value to the environment") for w in settings.warnings]
    checks: list[Check] = [_channels, _http, _web, _store, _redis, _workspace, _models, _mcp, _agents]
    return lines + await _run(checks, settings, timeout_s)


async def secret_checks(settings: Settings, timeout_s: float = 10.0) -> list[Line]:
    """The checks that test secrets (the channels' tokens against their platforms, the models' keys): what
    ``bot init`` runs after asking for them."""
    return await _run([_channels, _models], settings, timeout_s)


async def _run(checks: list[Check], settings: Settings, timeout_s: float) -> list[Line]:
    lines: list[Line] = []
    for check in checks:
        try:
            lines += await asyncio.wait_for(check(settings), timeout_s * 4)
        except TimeoutError:
            lines.append(Line(False, f"{check.__name__.strip('_')}: no answer within {timeout_s * 4:.0f} s"))
    return lines


def _config_fix(error: str, file: Path) -> str:
    """A variable is offered as the fix only where one could fix it (an unset ``${VAR}``, a ``BOT_…`` variable)."""
    if error.startswith(f"{HOME_VARIABLE}="):
        return f"set {HOME_VARIABLE} to a project folder (one holding config/bot.yaml), or unset it"
    if "config file not found" in error:
        return f"check the path {file} (-c/--config), or create the project with `bot init`"
    if "is not set (write ${" in error:
        return f"edit {file}, or set the variable named (export it, or in .env); `bot config show` prints the result"
    lines = [line.strip() for line in error.splitlines()[1:]] or [error]
    fixes = []
    if any(line.startswith("env BOT_") for line in lines):
        fixes.append("fix or unset the BOT_… variable named above")
    if not all(line.startswith("env BOT_") for line in lines):
        fixes.append("edit the file named above at the field named")
    return "; ".join([*fixes, "`bot config show` prints the result"])


def _project(settings: Settings, config: Path | None, env: Mapping[str, str]) -> Line:
    """Which project folder this is and how it was found (``-c``, ``BOT_HOME``, from the working directory up)."""
    file = settings.project_file
    if file is None:
        data = settings.store.data_dir.expanduser().absolute()
        return Line(
            True,
            f"project: none found from {Path.cwd()} up (no config/bot.yaml); using built-in defaults and {data}",
            "run bot in the project's folder (or one inside it), `bot -C DIR`, or set BOT_HOME=DIR; "
            "`bot init` writes a project here",
            warn=True,
        )
    folder = project_dir(file)
    how = "-c" if config is not None else "BOT_HOME" if env.get(HOME_VARIABLE, "").strip() else f"from {Path.cwd()} up"
    return Line(True, f"project: {folder} ({file.relative_to(folder) if file.is_relative_to(folder) else file}; {how})")


def _layers(settings: Settings, config: Path | None, env: dict[str, str]) -> Line:
    files = ["built-in defaults"]
    user = USER_CONFIG.expanduser()
    files.append(str(user) if user.is_file() else f"{user} (absent)")
    project = settings.project_file or config or PROJECT_CONFIG
    files.append(str(project) if project.is_file() else f"{project} (absent)")
    if settings.env_files is not None and settings.env_files.read:
        files.append(", ".join(f"{path} ({len(dotenv_values(path))} variables)" for path in settings.env_files.read))
    variables = sorted(n for n in env if n.startswith("BOT_") and "__" in n)
    files.append(f"{len(variables)} BOT_* variable(s)")
    return Line(True, "config: " + " < ".join(files))


async def _channels(settings: Settings) -> list[Line]:
    enabled = settings.channels.enabled()
    if not enabled:
        return [Line(False, "channels: none is enabled: nobody can reach the bot", "set channels.<name>.enabled: true")]
    lines = []
    for name in enabled:
        section = settings.channels.section(name)
        problems = section.problems()
        if problems:
            lines += [Line(False, f"{name}: {p.split(': set ')[0]}", _fix(p)) for p in problems]
            continue
        paired = await _paired_admins(settings, name, section.admins)
        if not section.allow_from and not section.admins and not paired:
            nobody = f"{name}: nobody may talk to the bot (allow_from and admins are empty)"
            lines.append(Line(False, nobody, _NO_ADMIN_FIX % name))
        else:
            who = "everyone" if "*" in section.allow_from else f"{len(section.allow_from)} allowed"
            lines.append(Line(True, f"{name}: enabled ({who}, {len(section.admins) + paired} admin(s))"))
            if name not in LOCAL_CHANNELS and not section.admins and not paired:
                lines.append(
                    Line(True, f"{name}: no admin: nobody can let a colleague in from a chat", _NO_ADMIN_FIX % name,
                         warn=True)
                )  # fmt: skip
        try:
            found = await PLUGINS[name].check(section)
        except Exception as exc:  # a platform library's surprise: reported, never a traceback
            found = []
            lines.append(Line(False, f"{name}: the check failed: {exc.__class__.__name__}: {exc}"))
        lines += [Line(f.ok, f.what, f.fix) for f in found]
    return lines


_NO_ADMIN_FIX = (
    "`bot pair list`, then `bot pair approve CODE --admin` (the code a stranger is given; works while the bot runs), "
    "or add your user id to channels.%s.admins (the bot tells a stranger their id)"
)


async def _paired_admins(settings: Settings, channel: str, admins: list[str]) -> int:
    """1 when ``channel`` has no ``admins`` but one let in by ``bot pair approve CODE --admin`` (a store read)."""
    if admins or channel in LOCAL_CHANNELS:
        return 0
    from bot.cli.pair import paired_admin_channels

    return int(channel in await paired_admin_channels(settings))


def _fix(problem: str) -> str:
    head, sep, rest = problem.partition(": set ")
    return f"set {rest}" if sep else head


async def _http(settings: Settings) -> list[Line]:
    webhooks = [n for n in settings.channels.enabled() if settings.channels.section(n).serves_http()]
    http = settings.http
    if not http.enabled and not webhooks and not settings.web.enabled:
        return [Line(True, "http: off (no webhooks; /healthz, /readyz and /metrics need http.enabled)")]
    where = f"{http.host}:{http.port}"
    running = await asyncio.to_thread(_health, http.host, http.port)
    if running is not None:
        return [Line(True, f"http: a gateway answers at {where}/healthz ({running})")]
    try:
        with socket.create_server((http.host, http.port)):
            pass
    except OSError as exc:
        return [Line(False, f"http: cannot listen on {where}: {exc.strerror}", "choose another http.port")]
    note = f"; webhooks of {', '.join(webhooks)} need a public HTTPS proxy to it" if webhooks else ""
    return [Line(True, f"http: {where} is free{note}")]


async def _web(settings: Settings) -> list[Line]:
    web = settings.web
    if not web.enabled:
        if "web" in settings.channels.enabled():
            return [Line(False, "web: the web channel is on but the web console is off: nobody can reach its Chat page",
                         "set web.enabled: true (and http.enabled: true), or channels.web.enabled: false")]  # fmt: skip
        return []
    admins = sum(1 for u in web.users if u.role == "admin")
    who = f"{admins} admin(s), {len(web.users) - admins} viewer(s)" + (", an admin token" if web.token else "")
    where = f"http://{settings.http.host}:{settings.http.port}{web.path}"
    lines = [Line(True, f"web: the console at {where} ({who})")]
    if web.token and len(web.token) < 16:
        lines.append(
            Line(False, "web: the admin token is short enough to guess", "set BOT_WEB__TOKEN to 16+ random characters")
        )
    if not admins and not web.token:
        lines.append(Line(False, "web: nobody can act in the console (viewers only)", "give a user role: admin"))
    public = settings.http.host not in ("127.0.0.1", "localhost", "::1")
    if public and web.secure_cookies != "always" and not web.trust_proxy:
        what = f"web: served on {settings.http.host} over plain HTTP: passwords and sessions cross the network"
        fix = "put it behind an HTTPS proxy and set web.trust_proxy: true (or web.secure_cookies: always)"
        lines.append(Line(False, what, fix))
    return lines


def _health(host: str, port: int) -> str | None:
    host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=2) as response:
            return str(json.loads(response.read().decode()).get("status"))
    except Exception:
        return None


async def _store(settings: Settings) -> list[Line]:
    url = settings.store.database_url()
    shown = url.split("@")[-1]
    head = head_revision()
    if url.startswith("sqlite"):
        path = Path(url.split(":///", 1)[1])
        if not path.is_file():
            return [Line(True, f"database: {path} does not exist yet (created and migrated at the first start)")]
    else:
        problem = await postgres_reachable(url)
        if problem is not None:
            return [Line(False, f"database: cannot connect to {shown}: {problem}", "check store.url / DATABASE_URL")]
    revision = await current_revision(url)
    if revision == head:
        return [Line(True, f"database: {shown}, migrations current ({head})")]
    if revision is None:
        return [Line(True, f"database: {shown} is empty (migrated to {head} at the first start)")]
    if revision < head:
        return [
            Line(
                False,
                f"database: {shown} is at {revision}; this version needs {head}",
                "start the bot once: it migrates",
            )
        ]
    return [Line(False, f"database: {shown} is at {revision}, newer than this version ({head})", "upgrade the bot")]


async def _redis(settings: Settings) -> list[Line]:
    url = settings.bus.url
    if not url:
        return [Line(True, "bus: in-process (one process; bus.url / REDIS_URL for several)")]
    shown = url.split("@")[-1]
    try:
        import redis.asyncio as redis
    except ImportError:
        return [Line(False, "bus: the redis package is missing", "pip install -e '.[scale]' in the bot's clone")]
    client: Any = redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        await client.ping()
    except Exception as exc:
        return [
            Line(
                False,
                f"bus: Redis at {shown} does not answer ({exc.__class__.__name__}: {exc})",
                "check bus.url / REDIS_URL",
            )
        ]
    finally:
        await client.aclose()
    return [Line(True, f"bus: Redis at {shown} answers")]


async def _workspace(settings: Settings) -> list[Line]:
    """The tools' workspace must not hold the bot's own files (``bot run`` refuses to start when it does)."""
    problem = workspace_problem(settings)
    if problem is not None:
        return [Line(False, f"workspace: {problem}", WORKSPACE_FIX)]
    return [Line(True, f"workspace: {workspace_path(settings)} (the bot's own files are outside it)")]


async def _models(settings: Settings) -> list[Line]:
    try:
        catalog = ModelCatalog(
            settings.model, timezone=settings.jobs.timezone, inline_max_mb=settings.media.inline_max_mb
        )
    except ConfigError as exc:  # the main model cannot be built (provider: gemini without its key)
        label = f"{settings.model.provider}/{settings.model.name}"
        return [Line(False, f"model {label}: {exc}", "set the key (in .env or exported), or choose another model")]
    wanted = [("model", "")] + [("fallback", spec) for spec in settings.model.fallbacks]
    if settings.routing.llm.model:
        wanted.append(("routing.llm.model", settings.routing.llm.model))
    if settings.memory.summary.model not in ("", "extractive"):
        wanted.append(("memory.summary.model", settings.memory.summary.model))
    lines = []
    try:
        for role, spec in wanted:
            lines.append(await _one_model(catalog, role, spec))
        if settings.memory.embeddings.model:
            lines.append(await _embedder(catalog, settings.memory.embeddings.model))
    finally:
        await catalog.aclose()
    return lines


async def _one_model(catalog: ModelCatalog, role: str, spec: str) -> Line:
    label = spec or f"{catalog.provider}/{catalog.config.name}"
    try:
        model = catalog.build(spec, Generation(max_output_tokens=1))
    except ConfigError as exc:
        return Line(False, f"{role} {label}: {exc}", "set the key in the environment, or choose another model")
    if not model.understands:
        how = "model.provider: gemini or openai" if catalog.config.provider == "offline" else "GEMINI_API_KEY"
        return Line(True, f"{role}: the offline stand-in, canned answers ({how} gives a real model)")
    started = time.perf_counter()
    try:
        response = await model.request([Message.user("Reply with OK.")])
    except ModelUnavailable as exc:  # never reached it, or it is down: the key was not judged
        where = _network_cause(exc)
        fix = "check the network (DNS, proxy, firewall) and base_url; the API key was not checked"
        return Line(False, f"{role} {label}: {exc}{f' ({where})' if where else ''}", fix)
    except ModelError as exc:
        return Line(False, f"{role} {label}: {exc}", "check the API key, model name and base_url")
    finally:
        await model.aclose()
    took = (time.perf_counter() - started) * 1000
    tokens = response.usage.input_tokens + response.usage.output_tokens
    return Line(True, f"{role} {label} answered a 1-token request ({tokens} tokens, {took:.0f} ms)")


def _network_cause(exc: BaseException) -> str:
    """``DNS: …`` or ``connection refused`` from the errors behind ``exc``, or ''."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return f"DNS: {seen.strerror or seen}"
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return ""


async def _embedder(catalog: ModelCatalog, spec: str) -> Line:
    provider, name = parse_spec(spec, catalog.provider)
    try:
        model = catalog.build(spec)
        vectors = await model.embed(["ping"])
        await model.aclose()
    except (ConfigError, ModelError) as exc:
        return Line(False, f"memory.embeddings.model {provider}/{name}: {exc}", "choose a model that embeds, or ''")
    return Line(True, f"memory.embeddings.model {provider}/{name}: {len(vectors[0])} dimensions")


async def _mcp(settings: Settings) -> list[Line]:
    from agents.tools.mcp.manager import McpManager

    servers = {n: s for n, s in settings.mcp.servers.items() if s.enabled}
    if not servers:
        return [Line(True, "mcp: no servers configured")]
    manager = McpManager(servers)
    try:
        statuses = await manager.connect_all()
    finally:
        await manager.aclose()
    lines = []
    for status in statuses:
        if status.state == "up":
            lines.append(Line(True, f"mcp {status.name}: up, {len(status.tools)} tool(s)"))
        else:
            reason = status.reason or status.state
            lines.append(
                Line(False, f"mcp {status.name}: {reason}", f"check mcp.servers.{status.name} ({status.target})")
            )
    return lines


async def _agents(settings: Settings) -> list[Line]:
    from bot.cli.agents import _load, _problem
    from bot.cli.mcp import mcp_problems

    registry = _load(settings, check=True)
    specs = list(registry)
    errors = [*registry.errors, *mcp_problems(settings, specs)]
    lines = [
        Line(False, f"agent file {_problem(e)}", "fix the field named; `bot agents validate` checks again")
        for e in errors
    ]
    if not errors:
        files = sum(1 for spec in specs if spec.scope != "builtin")
        where = ", ".join(str(d) for d in settings.agents.dirs) or "no project folder"
        lines.append(Line(True, f"agents: {len(specs)} valid ({files} from files; project agents in {where})"))
    missing = [d for d in settings.agents.dirs if settings.origin("agents.dirs") != "default" and not d.is_dir()]
    lines += [
        Line(False, f"agents: the folder {d} (agents.dirs) does not exist", "create it, or fix agents.dirs")
        for d in missing
    ]
    return lines
