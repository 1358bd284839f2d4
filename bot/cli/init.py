"""``bot init``: a commented ``config/bot.yaml`` for the channels chosen, and a ``.env.example`` listing the
secrets to export. Asks at a terminal; ``--yes`` (or no terminal) takes the flags as they are. The file is
validated (with placeholder secrets) before anything is written, and nothing is overwritten without ``--force``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from bot.config.settings import ConfigError, load_settings

CHANNELS = ("console", "telegram", "slack", "discord")
MODELS = ("gemini", "openai", "offline")


@dataclass
class Choices:
    channels: list[str] = field(default_factory=lambda: ["console"])
    telegram_mode: str = "polling"
    public_url: str = ""
    slack_mode: str = "socket"
    model: str = "gemini"
    admins: dict[str, list[str]] = field(default_factory=dict)
    scale: bool = False
    http: bool = False


SECRETS: dict[str, tuple[str, str]] = {
    "GEMINI_API_KEY": ("gemini", "Google AI Studio → Get API key"),
    "OPENAI_API_KEY": ("openai", "your OpenAI-compatible provider (leave empty for a local endpoint)"),
    "TELEGRAM_BOT_TOKEN": ("telegram", "@BotFather → /newbot"),
    "TELEGRAM_WEBHOOK_SECRET": ("telegram-webhook", "any long random string (checked on every webhook request)"),
    "SLACK_BOT_TOKEN": ("slack", "api.slack.com/apps → OAuth & Permissions → Bot User OAuth Token (xoxb-…)"),
    "SLACK_APP_TOKEN": ("slack-socket", "Basic Information → App-Level Tokens, scope connections:write (xapp-…)"),
    "SLACK_SIGNING_SECRET": ("slack-http", "Basic Information → Signing Secret"),
    "DISCORD_BOT_TOKEN": ("discord", "discord.com/developers → your app → Bot → Reset Token"),
    "DATABASE_URL": ("scale", "postgresql://bot:password@127.0.0.1:5432/bot"),
    "REDIS_URL": ("scale", "redis://127.0.0.1:6379/0"),
    "BOT_METRICS__TOKEN": ("http", "optional: Prometheus must send it as a bearer token"),
}


def needed(choices: Choices) -> list[str]:
    """The secrets ``choices`` use, in the order of :data:`SECRETS`."""
    keys = set(choices.channels) | {choices.model}
    if "telegram" in choices.channels and choices.telegram_mode == "webhook":
        keys.add("telegram-webhook")
    if "slack" in choices.channels:
        keys.add(f"slack-{choices.slack_mode}")
    if choices.scale:
        keys.add("scale")
    if _serves_http(choices):
        keys.add("http")
    return [name for name, (key, _how) in SECRETS.items() if key in keys]


def _serves_http(choices: Choices) -> bool:
    """Asked for, needed by a webhook, or scaled out (probes and metrics of each process)."""
    return choices.http or choices.scale or _webhooks(choices)


def _webhooks(choices: Choices) -> bool:
    return ("telegram" in choices.channels and choices.telegram_mode == "webhook") or (
        "slack" in choices.channels and choices.slack_mode == "http"
    )


def render_config(choices: Choices) -> str:
    on = set(choices.channels)
    admins = choices.admins
    lines = [
        "# Written by `bot init`. Every key here overrides the built-in defaults (`bot config show` prints the",
        "# effective values, secrets redacted). Secrets come from the environment (see .env.example): this file",
        "# only names them as ${VARIABLE}. Any key can also be set as BOT_<SECTION>__<KEY>=value.",
        "# Check the setup with `bot doctor`; start with `bot run`.",
        "",
        "model:",
        "  # auto: Gemini when GEMINI_API_KEY is set, else the labelled offline model.",
        f"  provider: {'auto' if choices.model in ('gemini', 'offline') else 'openai'}",
        f"  name: {'gpt-4o-mini' if choices.model == 'openai' else 'gemini-2.5-flash'}",
    ]
    if choices.model == "openai":
        lines += ["  # base_url: http://127.0.0.1:11434/v1   # Ollama, vLLM, LM Studio, OpenRouter …"]
    lines += ["", "store:", "  data_dir: data            # SQLite file and media; DATABASE_URL switches to PostgreSQL"]
    if choices.scale:
        lines += [
            "  url: ${DATABASE_URL}",
            "",
            "bus:",
            "  url: ${REDIS_URL}          # several processes: bot run --role gateway|worker",
        ]
    http = _serves_http(choices)
    lines += [
        "",
        "http:",
        "  # /healthz, /readyz and /metrics (Prometheus), and the webhooks.",
        f"  enabled: {str(http).lower()}",
        f"  host: {'0.0.0.0' if http else '127.0.0.1'}",
        "  port: 8080",
        "",
        "budgets:",
        "  # Model tokens per person and per chat (0 = no limit); /usage shows them. Days start at midnight here.",
        "  timezone: UTC",
        "  user: {daily_tokens: 0, monthly_tokens: 0}",
        "  chat: {daily_tokens: 0, monthly_tokens: 0}",
        "",
        "log:",
        "  level: INFO",
        f"  format: {'json' if choices.scale else 'text'}          # json: one object per line, with correlation ids",
        "",
        "channels:",
        "  console:",
        f"    enabled: {str('console' in on).lower()}         # chat in this terminal",
    ]
    if "telegram" in on:
        lines += [
            "  telegram:",
            "    enabled: true",
            "    token: ${TELEGRAM_BOT_TOKEN}",
            f"    allow_from: {_ids(admins.get('telegram'))}   # Telegram user ids; strangers are told theirs",
            f"    admins: {_ids(admins.get('telegram'))}",
            "    mention_policy: mention   # groups: answer only when mentioned (or all)",
            f"    mode: {choices.telegram_mode}",
        ]
        if choices.telegram_mode == "webhook":
            url = choices.public_url.rstrip("/") + "/telegram/webhook" if choices.public_url else ""
            lines += [
                "    webhook:",
                f"      url: {url or 'https://bot.example.com/telegram/webhook'}   # public HTTPS, to http.port",
                "      path: /telegram/webhook",
                "      secret_token: ${TELEGRAM_WEBHOOK_SECRET}",
            ]
    if "slack" in on:
        lines += [
            "  slack:",
            "    enabled: true",
            "    bot_token: ${SLACK_BOT_TOKEN}",
            "    app_token: ${SLACK_APP_TOKEN}"
            if choices.slack_mode == "socket"
            else "    signing_secret: ${SLACK_SIGNING_SECRET}",
            f"    allow_from: {_ids(admins.get('slack'))}   # Slack member ids (U…)",
            f"    admins: {_ids(admins.get('slack'))}",
            f"    mode: {choices.slack_mode}   # socket: no public URL needed; http: events at http.port/slack/events",
        ]
    if "discord" in on:
        lines += [
            "  discord:",
            "    enabled: true",
            "    token: ${DISCORD_BOT_TOKEN}",
            f"    allow_from: {_ids(admins.get('discord'))}   # Discord user ids",
            f"    admins: {_ids(admins.get('discord'))}",
            "    allowed_channels: []   # channel ids the bot reads (empty: mentions and DMs everywhere)",
        ]
    return "\n".join(lines) + "\n"


def _ids(values: list[str] | None) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values or []) + "]"


def render_env(choices: Choices) -> str:
    lines = [
        "# Secrets for config/bot.yaml: copy to .env (never commit it) and fill in, or export them (they win).",
        "# The bot reads .env beside config/ or in the folder it starts in; docker compose reads deploy/.env.",
        "",
    ]
    for name in needed(choices):
        lines += [f"# {SECRETS[name][1]}", f"{name}="]
    return "\n".join(lines) + "\n"


def validate(config_text: str, choices: Choices) -> None:
    """Load ``config_text`` as the project file, every layer, with placeholder secrets: raises ConfigError."""
    env = {name: "placeholder-" + name.lower() for name in needed(choices)}
    env["TELEGRAM_BOT_TOKEN"] = "123456:placeholder"  # a token's shape is checked when the settings load
    if choices.scale:
        env["DATABASE_URL"], env["REDIS_URL"] = "postgresql://bot:pw@127.0.0.1:5432/bot", "redis://127.0.0.1:6379/0"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bot.yaml"
        path.write_text(config_text, encoding="utf-8")
        load_settings(path, env=env, user_config=Path(tmp) / "none.yaml")


def ask(choices: Choices) -> Choices:
    """The choices at a terminal, the flags as defaults."""
    picked = typer.prompt("Channels (comma-separated: console, telegram, slack, discord)", ",".join(choices.channels))
    choices.channels = _channels(picked)
    if "telegram" in choices.channels:
        choices.telegram_mode = _pick("Telegram: polling or webhook", choices.telegram_mode, ("polling", "webhook"))
        if choices.telegram_mode == "webhook":
            choices.public_url = typer.prompt(
                "Public HTTPS base URL (e.g. https://bot.example.com)", choices.public_url or ""
            )
    if "slack" in choices.channels:
        choices.slack_mode = _pick("Slack: socket or http", choices.slack_mode, ("socket", "http"))
    for name in (c for c in choices.channels if c != "console"):
        given = typer.prompt(
            f"{name}: your user id (admin; empty to add later)", ",".join(choices.admins.get(name, []))
        )
        choices.admins[name] = [v.strip() for v in given.split(",") if v.strip()]
    choices.model = _pick("Model: gemini, openai or offline", choices.model, MODELS)
    choices.scale = typer.confirm("Several processes (PostgreSQL + Redis)?", choices.scale)
    choices.http = typer.confirm("Serve /healthz and /metrics over HTTP?", choices.http or choices.scale)
    return choices


def _pick(question: str, default: str, allowed: tuple[str, ...]) -> str:
    while True:
        answer = typer.prompt(question, default).strip().lower()
        if answer in allowed:
            return answer
        typer.echo(f"one of: {', '.join(allowed)}")


def _channels(text: str) -> list[str]:
    names = [c.strip().lower() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in CHANNELS]
    if unknown:
        raise typer.BadParameter(f"unknown channel {unknown[0]!r}: one of {', '.join(CHANNELS)}")
    return names or ["console"]


def init(
    channels: Annotated[str, typer.Option(help="Comma-separated: console, telegram, slack, discord.")] = "console",
    telegram_mode: Annotated[str, typer.Option(help="polling | webhook")] = "polling",
    public_url: Annotated[str, typer.Option(help="Webhooks: the public HTTPS base URL.")] = "",
    slack_mode: Annotated[str, typer.Option(help="socket | http")] = "socket",
    model: Annotated[str, typer.Option(help="gemini | openai | offline")] = "gemini",
    admin: Annotated[list[str] | None, typer.Option(help="CHANNEL:USER_ID, allowed and admin; repeatable.")] = None,
    scale: Annotated[bool, typer.Option(help="PostgreSQL + Redis (bot run --role gateway|worker).")] = False,
    http: Annotated[bool, typer.Option(help="Serve /healthz, /readyz, /metrics.")] = False,
    directory: Annotated[Path, typer.Option("--dir", help="Where config/ and .env.example go.")] = Path("."),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="No questions: the flags as given.")] = False,
    interactive: Annotated[
        bool | None, typer.Option("--ask/--no-ask", help="Ask the questions (default: at a terminal).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite existing files.")] = False,
) -> None:
    """Write a commented config/bot.yaml for the channels chosen and a .env.example of the secrets they need."""
    if telegram_mode not in ("polling", "webhook") or slack_mode not in ("socket", "http") or model not in MODELS:
        typer.echo(
            "--telegram-mode is polling|webhook, --slack-mode socket|http, --model gemini|openai|offline", err=True
        )
        raise typer.Exit(2)
    admins: dict[str, list[str]] = {}
    for entry in admin or []:
        name, sep, user = entry.partition(":")
        if not sep or name not in CHANNELS or not user:
            typer.echo(f"--admin {entry!r}: expected CHANNEL:USER_ID, e.g. telegram:123456", err=True)
            raise typer.Exit(2)
        admins.setdefault(name, []).append(user)
    choices = Choices(_channels(channels), telegram_mode, public_url, slack_mode, model, admins, scale, http)
    if interactive if interactive is not None else not yes and sys.stdin.isatty() and not os.environ.get("CI"):
        choices = ask(choices)
    config, env_file = directory / "config" / "bot.yaml", directory / ".env.example"
    existing = [p for p in (config, env_file) if p.exists()]
    if existing and not force:
        typer.echo(f"{existing[0]} exists; --force overwrites it", err=True)
        raise typer.Exit(1)
    text = render_config(choices)
    try:
        validate(text, choices)
    except ConfigError as exc:  # a bug here, never the user's: say so rather than write a broken file
        typer.echo(f"the generated configuration does not load ({exc}); nothing was written", err=True)
        raise typer.Exit(1) from None
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text, encoding="utf-8")
    env_file.write_text(render_env(choices), encoding="utf-8")
    typer.echo(f"wrote {config} and {env_file}")
    secrets = needed(choices)
    if secrets:
        typer.echo(
            f"next: copy {env_file} to {env_file.with_name('.env')} and fill in {', '.join(secrets)} (the bot reads "
            "that .env, or one in the folder it starts in; exported variables win), then `bot doctor`, then `bot run`"
        )
        if choices.scale:
            typer.echo(
                "docker compose -f deploy/docker-compose.yml reads deploy/.env (the compose file's folder), "
                "not this one: put the same lines there"
            )
    else:
        typer.echo("next: `bot doctor`, then `bot run`")
