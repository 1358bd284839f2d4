"""The ``bot`` command line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from bot.cli.agents import agents_app
from bot.cli.evals import eval_command
from bot.cli.init import init as init_command
from bot.cli.mcp import mcp_app
from bot.cli.pair import NO_ADMIN, pair_app
from bot.cli.service import service_app
from bot.cli.settings import ConfigOpt, DirectoryOpt, announce_project, cli_settings, pass_config_down
from bot.cli.startup import load_platform_libraries
from bot.cli.web import web_app
from bot.config.secrets import scrub_environment
from bot.config.settings import ConfigError, Settings
from channels.registry import PLUGINS

app = typer.Typer(
    help="A supervisor chat-bot gateway. Without a command, runs every enabled channel.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
config_app = typer.Typer(help="Inspect the effective configuration.", add_completion=False)
app.add_typer(config_app, name="config")
app.add_typer(agents_app, name="agents")
app.add_typer(mcp_app, name="mcp")
app.add_typer(web_app, name="web")
app.add_typer(pair_app, name="pair")
app.add_typer(service_app, name="service")
app.command("eval")(eval_command)

_settings = cli_settings


def _setup_logging(settings: Settings) -> None:
    from bot.cli.logs import setup_logging

    if settings.channels.section("console").enabled:
        # The terminal is the chat: log lines go to a file, the terminal shows only warnings and errors.
        file = settings.store.data_dir.expanduser() / "bot.log"
        try:
            setup_logging(
                settings.log.level,
                settings.secrets(),
                file=file,
                terminal_level="WARNING",
                format=settings.log.format,
            )
            return
        except OSError as exc:
            typer.echo(f"cannot write the log file {file} ({exc.strerror}); logging to the terminal", err=True)
    setup_logging(settings.log.level, settings.secrets(), format=settings.log.format)


STOP_WITHIN_S = 5.0
"""SIGTERM/SIGINT end the process within this many seconds, whatever is running."""
DRAIN_S = 2.5
"""Of which in-flight work may take this long to finish (then it is cancelled and recovered at the next start)."""


def _exit_now(code: int, why: str) -> None:
    sys.stderr.write(f"bot: {why}; exiting now\n")
    sys.stderr.flush()
    os._exit(code)


async def _run_gateway(settings: Settings, *, until_console_done: bool, role: str = "all") -> int:
    for warning in settings.warnings:
        logging.getLogger("bot").warning("config: %s", warning)
    began = time.monotonic()
    enabled = settings.channels.enabled()
    if not enabled:
        typer.echo("WARNING: no channel is enabled: nobody can reach this bot (set channels.<name>.enabled)", err=True)
    if role == "worker":
        typer.echo(f"Starting a worker for: {', '.join(enabled) or 'no channels'}…", err=True)
    else:
        typer.echo(
            f"Starting the bot{'' if role == 'all' else ' gateway'}: {', '.join(enabled) or 'no channels'}…", err=True
        )

    def progress(line: str) -> None:
        typer.echo(f"  {line}", err=True)

    if role != "worker":
        load_platform_libraries(enabled, progress)
    from bot.gateway.app import Gateway

    try:
        gateway = Gateway(settings, progress=progress, role=role)  # type: ignore[arg-type]
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            _exit_now(130, "second stop signal")
        stop.set()
        # Whatever hangs (a platform, a model, an MCP server), the process is gone in STOP_WITHIN_S.
        watchdog = threading.Timer(STOP_WITHIN_S - 0.3, _exit_now, (1, f"shutdown took over {STOP_WITHIN_S:g} s"))
        watchdog.daemon = True
        watchdog.start()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
        except (NotImplementedError, RuntimeError):
            pass
    if gateway.model.name == "offline":
        typer.echo(
            "Using the offline model (no model key set): answers are labelled [offline model]. "
            "Try: what time is it in Tokyo? / plan a weekend trip to Paris",
            err=True,
        )
    from bot.gateway.runtime import tune_process

    async def start() -> None:
        await gateway.start()
        tune_process(settings.runtime)
        for name in await gateway.access.without_admin():
            logging.getLogger("bot").warning(NO_ADMIN, name, name)
        # Said before anything else runs: the console's first prompt waits for the gateway's start (set last),
        # so it comes after this line.
        typer.echo(f"Ready in {time.monotonic() - began:.1f} s.", err=True)

    starting = asyncio.create_task(start())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():  # stopped while starting (recovery can take a while)
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await gateway.stop(timeout=DRAIN_S)
        return 0
    stopping.cancel()
    if starting.exception() is not None:
        typer.echo(f"could not start: {starting.exception()}", err=True)
        await gateway.stop(timeout=DRAIN_S)
        return 1
    waiters: list[asyncio.Task[Any]] = [asyncio.create_task(stop.wait())]
    from channels.console import ConsoleChannel

    for channel in gateway.channels:
        if isinstance(channel, ConsoleChannel):
            if until_console_done:
                waiters.append(asyncio.create_task(channel.finished.wait()))
            else:
                waiters.append(asyncio.create_task(_console_ended(channel)))
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await gateway.stop(timeout=DRAIN_S if stop.is_set() else 30.0)
    return 0


async def _console_ended(console: Any) -> None:
    """The console's input ended while other channels serve: say so, and keep serving."""
    await console.finished.wait()
    typer.echo("Console input ended; the other channels keep running (Ctrl-C stops the bot).", err=True)
    await asyncio.Event().wait()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"supervisor-bot {version('supervisor-bot')}")
        except PackageNotFoundError:
            typer.echo("supervisor-bot (not installed)")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _default(
    ctx: typer.Context,
    config: ConfigOpt = None,
    directory: DirectoryOpt = None,
    version: Annotated[
        bool,
        # metavar="": a flag takes no value (typer would show it as `--version <bool>`).
        typer.Option("--version", callback=_version, is_eager=True, metavar="", help="Print the version and exit."),
    ] = False,
) -> None:
    pass_config_down(ctx, config)
    if ctx.invoked_subcommand is None:
        _run(config, eof_stops=True)


@app.command()
def run(
    config: ConfigOpt = None,
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="all: one process does everything (default); gateway: platform connections and delivery; "
            "worker: the supervisor and agents. gateway and worker need bus.url (Redis) and store.url (PostgreSQL).",
        ),
    ] = "all",
) -> None:
    """Start every enabled channel and serve until SIGINT/SIGTERM (in-flight work is drained).

    With the console as the only channel, Ctrl-D at a terminal stops it too; a closed stdin
    (a service, a container) does not.
    """
    _run(config, eof_stops=sys.stdin.isatty(), role=role)


def _run(config: Path | None, *, eof_stops: bool, role: str = "all") -> None:
    from bot.gateway.scaled import ROLES

    if role not in ROLES:
        typer.echo(f"error: --role must be one of {', '.join(ROLES)} (got {role!r})", err=True)
        raise typer.Exit(2)
    settings = _settings(config)
    announce_project(settings)
    _setup_logging(settings)
    scrub_environment(settings.secrets())
    # The console alone: the end of its input (Ctrl-D, or the end of a pipe for plain `bot`) ends the bot.
    alone = settings.channels.enabled() == ["console"] and role != "worker"
    raise typer.Exit(asyncio.run(_run_gateway(settings, until_console_done=alone and eof_stops, role=role)))


@app.command()
def chat(config: ConfigOpt = None) -> None:
    """Chat in the terminal (console channel only). Reads one message per line when stdin is not a TTY."""
    settings = _settings(
        config,
        channels={name: {"enabled": name == "console"} for name in PLUGINS},
        http={"enabled": False},
    )
    announce_project(settings)
    _setup_logging(settings)
    scrub_environment(settings.secrets())
    raise typer.Exit(asyncio.run(_run_gateway(settings, until_console_done=True)))


@app.command()
def health(
    config: ConfigOpt = None,
    url: Annotated[str | None, typer.Option(help="Health URL (default: from the http section).")] = None,
) -> None:
    """Check a running gateway's health endpoint; exit 0 when healthy."""
    import urllib.error
    import urllib.request

    if url is None:
        settings = _settings(config)
        host = settings.http.host if settings.http.host not in ("0.0.0.0", "::") else "127.0.0.1"
        url = f"http://{host}:{settings.http.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.loads(response.read().decode())
    except urllib.error.HTTPError as exc:  # 503: starting, or no channel; the body says which
        try:
            body = json.loads(exc.read().decode())
        except ValueError:
            body = {"status": f"HTTP {exc.code}"}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        typer.echo(f"unhealthy: {url}: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(json.dumps(body))
    status = body.get("status")
    if status == "degraded":
        down = [f"{name}: {state}" for name, state in (body.get("channels") or {}).items() if state != "up"]
        typer.echo("degraded: " + "; ".join(down), err=True)
    elif status != "ok":
        typer.echo(f"unhealthy: {status}", err=True)
    raise typer.Exit(0 if status in ("ok", "degraded") else 1)


app.command("init")(init_command)


@app.command()
def doctor(
    config: ConfigOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds each network check may take.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: checks with name, status, fix.")] = False,
    fix: Annotated[
        bool,
        typer.Option("--fix", help="First fix what is safe: create folders, migrate, write .env from the example."),
    ] = False,
) -> None:
    """Check the setup: config, channel tokens, database, Redis, models, MCP servers, agent files; exit 1 on any ✗."""
    from bot.cli.doctor import diagnose, report
    from bot.cli.doctor_fix import fix as fix_safe

    logging.getLogger().setLevel(logging.CRITICAL)  # the lines say it; library warnings would only repeat it
    fixed = asyncio.run(fix_safe(config)) if fix else []
    text, code = report(asyncio.run(diagnose(config, timeout)), as_json=as_json, fixed=[f.render() for f in fixed])
    typer.echo(text)
    raise typer.Exit(code)


@config_app.command("show")
def config_show(config: ConfigOpt = None) -> None:
    """Print the effective configuration with every secret redacted."""
    settings = _settings(config)
    typer.echo(yaml.safe_dump(settings.redacted(), sort_keys=False, allow_unicode=True))


@app.command()
def trace(
    chat_key: Annotated[
        str | None,
        typer.Argument(help="The chat, e.g. telegram:12345 or slack:C123:1700000000.1 (default: the last one traced)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Every event as one JSON object per line.")] = False,
    last: Annotated[int, typer.Option("--last", min=1, max=100, help="How many of the chat's requests.")] = 1,
    config: ConfigOpt = None,
) -> None:
    """Show how a chat's last requests were handled (default: the chat traced last): route, model and tool calls,
    handoffs, interrupts."""
    from bot.cli.traces import print_trace

    settings = _settings(config)
    raise typer.Exit(asyncio.run(print_trace(settings, chat_key, last, as_json)))


@app.command()
def route(
    text: Annotated[str | None, typer.Argument(help="The message to route (omit with --stdin or --eval).")] = None,
    stdin: Annotated[bool, typer.Option("--stdin", help="Route one message per input line.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per message (every factor).")] = False,
    strategy: Annotated[str | None, typer.Option(help="rule | llm | hybrid (default: configured).")] = None,
    eval_file: Annotated[
        Path | None,
        typer.Option(
            "--eval",
            help="Measure routing on FILE.tsv (label TAB message per line): accuracy, "
            "per-agent precision and recall, confusion matrix, misroutes.",
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Dry-run routing: which agent would answer, by which method, how sure, and why. Nothing runs."""
    from bot.cli.route import route_messages

    settings = _settings(config)
    if strategy is not None and strategy not in ("rule", "llm", "hybrid"):
        typer.echo("--strategy must be rule, llm or hybrid", err=True)
        raise typer.Exit(2)
    if not stdin and text is None and eval_file is None:
        typer.echo("give a TEXT, --stdin or --eval FILE.tsv", err=True)
        raise typer.Exit(2)
    messages = [line.rstrip("\n") for line in sys.stdin] if stdin else [text or ""]
    found = [m for m in messages if m.strip()]
    raise typer.Exit(asyncio.run(route_messages(settings, found, strategy, as_json, eval_file)))


def main() -> None:
    command = typer.main.get_command(app)
    _no_flag_metavars(command)
    command(prog_name="bot")


def _no_flag_metavars(command: Any) -> None:
    """A flag takes no value: its help line shows none (typer would print ``--json <bool>``)."""
    for param in command.params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    help_option = command.get_help_option  # -h/--help is made when help is asked for

    def without_metavar(ctx: Any) -> Any:
        option = help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    command.get_help_option = without_metavar
    for sub in getattr(command, "commands", {}).values():
        _no_flag_metavars(sub)


if __name__ == "__main__":
    main()
    sys.exit(0)
