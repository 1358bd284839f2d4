"""``bot init``: a commented ``config/bot.yaml`` for the channels chosen, and a ``.env.example`` listing the
secrets to export. Asks at a terminal; ``--yes`` (or no terminal) takes the flags as they are. The file is
validated (with placeholder secrets) before anything is written, and nothing is overwritten without ``--force``.

It knows no channel by name: each registered channel plugin brings its questions (also this command's options,
``--telegram-mode``…), the keys it writes and the secrets they name (:class:`channels.setup.ChannelSetup`).
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from dotenv import dotenv_values

from bot.cli.deploy_files import write_deploy_files
from bot.cli.init_secrets import ask_secrets, check_secrets, write_secrets
from bot.config.channels import user_id_problem
from bot.config.settings import ConfigError, load_settings
from channels.registry import PLUGINS
from channels.setup import ChannelSetup, Question, Secret

MODELS = ("gemini", "openai", "offline")


@dataclass
class Choices:
    channels: list[str] = field(default_factory=lambda: ["console"])
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    """Channel → its questions' answers (:attr:`ChannelSetup.questions`)."""
    model: str = "gemini"
    admins: dict[str, list[str]] = field(default_factory=dict)
    scale: bool = False
    http: bool = False
    base_url: str = ""
    """The OpenAI-compatible endpoint (empty: OpenAI's)."""

    def of(self, channel: str) -> Mapping[str, str]:
        return self.answers.get(channel, {})


SECRETS: dict[str, tuple[str, str]] = {
    "GEMINI_API_KEY": ("gemini", "Google AI Studio → Get API key"),
    "OPENAI_API_KEY": ("openai", "your OpenAI-compatible provider (leave empty for a local endpoint)"),
    "DATABASE_URL": ("scale", "postgresql://bot:password@127.0.0.1:5432/bot"),
    "REDIS_URL": ("scale", "redis://127.0.0.1:6379/0"),
    "BOT_METRICS__TOKEN": ("http", "optional: Prometheus must send it as a bearer token"),
}
"""The secrets of the model and the deployment; each channel's come from its setup."""


def _setups() -> dict[str, ChannelSetup]:
    return {name: plugin.init() for name, plugin in PLUGINS.items()}


def secrets_of(choices: Choices) -> list[Secret]:
    """The secrets ``choices`` use: the model's, then each channel's in the registry's order, then the rest."""
    model = [Secret(name, how) for name, (key, how) in SECRETS.items() if key == choices.model]
    chosen = [(setup, choices.of(name)) for name, setup in _setups().items() if name in choices.channels]
    keys = {*(["scale"] if choices.scale else []), *(["http"] if _serves_http(choices) else [])}
    rest = [Secret(name, how) for name, (key, how) in SECRETS.items() if key in keys]
    return [*model, *(secret for setup, answers in chosen for secret in setup.secrets(answers)), *rest]


def needed(choices: Choices) -> list[str]:
    return [secret.variable for secret in secrets_of(choices)]


def _serves_http(choices: Choices) -> bool:
    """Asked for, needed by a webhook, or scaled out (probes and metrics of each process)."""
    return choices.http or choices.scale or _webhooks(choices)


def _public(choices: Choices) -> bool:
    """The HTTP server listens on every address: asked for, scaled out (probes), or a platform's webhook."""
    chosen = [(setup, choices.of(n)) for n, setup in _setups().items() if n in choices.channels]
    return choices.http or choices.scale or any(setup.listens_publicly(answers) for setup, answers in chosen)


def _webhooks(choices: Choices) -> bool:
    return any(setup.serves_http(choices.of(n)) for n, setup in _setups().items() if n in choices.channels)


def render_config(choices: Choices) -> str:
    lines = [
        "# Written by `bot init`. Every key here overrides the built-in defaults (`bot config show` prints the",
        "# effective values, secrets redacted). Secrets come from the environment (see .env.example): this file",
        "# only names them as ${VARIABLE}. Any key can also be set as BOT_<SECTION>__<KEY>=value.",
        "# Check the setup with `bot doctor`; start with `bot run`.",
        "",
        "model:",
        "  # gemini | openai | offline (the labelled stand-in, no key) | auto (Gemini when GEMINI_API_KEY is set).",
        "  # The provider named here is the one used: without its key `bot doctor` fails and `bot run` does not start.",
        f"  provider: {choices.model}",
        f"  name: {'gpt-4o-mini' if choices.model == 'openai' else 'gemini-2.5-flash'}",
    ]
    if choices.model == "openai":
        lines += (
            [f"  base_url: {choices.base_url}"]
            if choices.base_url
            else ["  # base_url: http://127.0.0.1:11434/v1   # Ollama, vLLM, LM Studio, OpenRouter …"]
        )
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
        f"  host: {'0.0.0.0' if http and _public(choices) else '127.0.0.1'}",
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
    ]
    for name, setup in _setups().items():
        lines += _channel_lines(name, setup, choices)
    for name, setup in _setups().items():
        if name in choices.channels and setup.sections(choices.of(name)):
            lines += ["", *setup.sections(choices.of(name))]
    return "\n".join(lines) + "\n"


def _channel_lines(name: str, setup: ChannelSetup, choices: Choices) -> list[str]:
    if name not in choices.channels:
        # Written only to turn off a channel that is on by default (the console).
        return [f"  {name}:", "    enabled: false"] if PLUGINS[name].settings().enabled else []
    lines = [f"  {name}:", "    enabled: true" + (f"         # {setup.comment}" if setup.comment else "")]
    lines += [f"    {line}" for line in setup.lines(choices.of(name))]
    if setup.asks_admin:
        ids = _ids(choices.admins.get(name))
        lines += [f"    allow_from: {ids}   # {setup.id_hint}", f"    admins: {ids}"]
    return lines


def _ids(values: list[str] | None) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values or []) + "]"


def render_env(choices: Choices) -> str:
    lines = [
        "# Secrets for config/bot.yaml: copy to .env (never commit it) and fill in, or export them (they win).",
        "# The bot reads .env beside config/ or in the folder it starts in; so does the compose.yaml of --scale.",
        "",
    ]
    for secret in secrets_of(choices):
        lines += [f"# {secret.how}", f"{secret.variable}="]
    return "\n".join(lines) + "\n"


def validate(config_text: str, choices: Choices) -> None:
    """Load ``config_text`` as the project file, every layer, with placeholder secrets: raises ConfigError."""
    env = {s.variable: s.placeholder or "placeholder-" + s.variable.lower() for s in secrets_of(choices)}
    if choices.scale:
        env["DATABASE_URL"], env["REDIS_URL"] = "postgresql://bot:pw@127.0.0.1:5432/bot", "redis://127.0.0.1:6379/0"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bot.yaml"
        path.write_text(config_text, encoding="utf-8")
        load_settings(path, env=env, user_config=Path(tmp) / "none.yaml")


def ask(choices: Choices) -> Choices:
    """The choices at a terminal, the flags as defaults."""
    setups = _setups()
    picked = typer.prompt(f"Channels (comma-separated: {', '.join(setups)})", ",".join(choices.channels))
    choices.channels = _channels(picked)
    for name, setup in setups.items():
        if name not in choices.channels:
            continue
        answers = choices.answers.setdefault(name, {})
        for question in setup.questions:
            if question.applies(answers):
                answers[question.key] = _ask(question, answers.get(question.key, question.default))
    for name in (c for c in choices.channels if setups[c].asks_admin):
        while True:
            given = typer.prompt(
                f"{name}: your user id, the first admin (empty: claim it later with `bot pair approve CODE --admin`)",
                ",".join(choices.admins.get(name, [])),
                show_default=bool(choices.admins.get(name)),
            )
            ids = [v.strip() for v in given.split(",") if v.strip()]
            problems = [p for p in (user_id_problem(name, i) for i in ids) if p is not None]
            if not problems:
                choices.admins[name] = ids
                break
            typer.echo(f"{name}: {problems[0]}")
    choices.model = _pick("Model: gemini, openai or offline", choices.model, MODELS)
    if choices.model == "openai":
        choices.base_url = str(
            typer.prompt("OpenAI-compatible endpoint (empty: api.openai.com)", choices.base_url, show_default=False)
        ).strip()
    choices.scale = typer.confirm("Several processes (PostgreSQL + Redis)?", choices.scale)
    choices.http = typer.confirm("Serve /healthz and /metrics over HTTP?", choices.http or choices.scale)
    return choices


def _ask(question: Question, default: str) -> str:
    if question.choices:
        return _pick(question.prompt, default, question.choices)
    return str(typer.prompt(question.prompt, default))


def _pick(question: str, default: str, allowed: tuple[str, ...]) -> str:
    while True:
        answer = typer.prompt(question, default).strip().lower()
        if answer in allowed:
            return answer
        typer.echo(f"one of: {', '.join(allowed)}")


def _channels(text: str) -> list[str]:
    names = [c.strip().lower() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in PLUGINS]
    if unknown:
        raise typer.BadParameter(f"unknown channel {unknown[0]!r}: one of {', '.join(PLUGINS)}")
    return names or ["console"]


class InitCommand:
    """``bot init`` as typer sees it: the fixed options, and one per question of each channel registered when the
    command line is built (its signature is read then, so a channel registered later has its options too)."""

    __name__ = "init"
    __doc__ = "Write a commented config/bot.yaml for the channels chosen and a .env.example of the secrets they need."

    @staticmethod
    def _questions() -> dict[str, tuple[str, Question]]:
        """Parameter name → (channel, question)."""
        return {
            f"{name}__{q.key}".replace("-", "_"): (name, q)
            for name, setup in _setups().items()
            for q in setup.questions
        }

    @property
    def __signature__(self) -> inspect.Signature:
        fixed = [p for p in inspect.signature(_init, eval_str=True).parameters.values() if p.name != "answers"]
        asked = [
            inspect.Parameter(
                param, inspect.Parameter.KEYWORD_ONLY, default=question.default,
                annotation=Annotated[str, typer.Option(f"--{question.option(channel)}", help=_help(channel, question))],
            )
            for param, (channel, question) in self._questions().items()
        ]  # fmt: skip
        listed = Annotated[str, typer.Option(help=f"Comma-separated: {', '.join(PLUGINS)}.")]
        head = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=listed if p.name == "channels" else p.annotation)
            for p in fixed
        ]
        return inspect.Signature([*head, *asked])

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        return {name: p.annotation for name, p in self.__signature__.parameters.items()}

    def __call__(self, **values: Any) -> None:
        answers: dict[str, dict[str, str]] = {}
        for param, (channel, question) in self._questions().items():
            value = str(values.pop(param, question.default) or "")
            if question.choices and value not in question.choices:
                typer.echo(f"--{question.option(channel)} is one of {'|'.join(question.choices)}", err=True)
                raise typer.Exit(2)
            answers.setdefault(channel, {})[question.key] = value
        _init(answers=answers, **values)


def _help(channel: str, question: Question) -> str:
    return f"{channel}: {' | '.join(question.choices)}" if question.choices else f"{channel}: {question.prompt}"


init = InitCommand()


def _init(
    channels: Annotated[str, typer.Option(help="Comma-separated: the registered channels.")] = "console",
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
    base_url: Annotated[str, typer.Option(help="openai: the OpenAI-compatible endpoint (empty: OpenAI's).")] = "",
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Test the secrets typed against the platforms and the model.")
    ] = True,
    answers: dict[str, dict[str, str]] | None = None,
) -> None:
    if model not in MODELS:
        typer.echo("--model is gemini|openai|offline", err=True)
        raise typer.Exit(2)
    admins: dict[str, list[str]] = {}
    for entry in admin or []:
        name, sep, user = entry.partition(":")
        if not sep or name not in PLUGINS or not user:
            typer.echo(f"--admin {entry!r}: expected CHANNEL:USER_ID, e.g. telegram:123456789", err=True)
            raise typer.Exit(2)
        problem = user_id_problem(name, user)
        if problem is not None:
            typer.echo(f"--admin {entry!r}: {problem}", err=True)
            raise typer.Exit(2)
        admins.setdefault(name, []).append(user)
    choices = Choices(_channels(channels), answers or {}, model, admins, scale, http, base_url.strip())
    asking = interactive if interactive is not None else not yes and sys.stdin.isatty() and not os.environ.get("CI")
    if asking:
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
    setups = _setups()
    for name in (c for c in choices.channels if setups[c].asks_admin and not choices.admins.get(c)):
        typer.echo(
            f"{name} has no admin yet: the first person who writes to the bot directly gets a code; "
            f"`bot pair approve CODE --admin` (while it runs) makes them its admin (`bot pair list` shows the codes)"
        )
    secrets = _secrets_step(choices, config, env_file.with_name(".env"), check) if asking else needed(choices)
    if secrets:
        dotenv = env_file.with_name(".env")
        fill = (
            f"fill in {', '.join(secrets)} in {dotenv}"
            if dotenv.exists()
            else (f"copy {env_file} to {dotenv} and fill in {', '.join(secrets)}")
        )
        typer.echo(
            f"next: {fill} (the bot reads that .env, or one in the folder it starts in; exported variables win), "
            "then `bot doctor`, then `bot run`"
        )
    else:
        typer.echo("next: `bot doctor`, then `bot run`")
    for line in write_deploy_files(choices, directory, force=force):  # compose.yaml (--scale), the service hint
        typer.echo(line)


def _secrets_step(choices: Choices, config: Path, dotenv: Path, check: bool) -> list[str]:
    """Ask each secret (hidden) into ``dotenv`` and, unless ``--no-check``, test them; the ones still missing."""
    secrets = secrets_of(choices)
    if not secrets:
        return []
    typer.echo(f"The secrets go to {dotenv} (mode 600, never into config/); Enter skips one.")
    typed = ask_secrets(secrets, dotenv, config)
    if typed:
        write_secrets(dotenv, typed)
        typer.echo(f"wrote {len(typed)} secret(s) to {dotenv}")
    have = {k for k, v in dotenv_values(dotenv).items() if v} if dotenv.is_file() else set()
    have |= {k for k, v in os.environ.items() if v}
    optional = {"OPENAI_API_KEY"} if choices.base_url else set()  # a local endpoint may want no key
    missing = [s.variable for s in secrets if s.variable not in have and s.variable not in optional]
    if check and len(missing) < len(secrets):
        typer.echo("Testing them (what `bot doctor` checks for the channels and the model; --no-check skips this):")
        failed = check_secrets(config)
        if failed:
            typer.echo(f"{failed} check(s) failed: see each fix above (the values are in {dotenv}); then `bot doctor`")
    return missing
