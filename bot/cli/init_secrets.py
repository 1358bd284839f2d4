"""``bot init``'s secrets: asked with hidden input, written to the project's ``.env`` (mode 600, merged into one
that exists, the rest of it kept), each checked offline for its shape at once and asked again when it is wrong
(a swapped Slack pair, a ``Bot ``-prefixed Discord token), then tested against the platforms and the model —
``getMe``, ``auth.test``, a Discord login, a 1-token model call: what ``bot doctor`` does for those — unless
``--no-check``. A value is never echoed, logged or written anywhere but ``.env``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

import typer
from dotenv import dotenv_values, set_key

from bot.config.settings import ConfigError, load_settings
from channels.setup import Secret

TRIES = 3
"""A secret whose shape is still wrong after this many answers is kept, and the check says what is wrong."""
CHECK_TIMEOUT_S = 10.0
VARIABLE = re.compile(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b")


def ask_secrets(secrets: list[Secret], env_file: Path, config: Path) -> dict[str, str]:
    """Each secret asked with hidden input (Enter keeps the value ``env_file`` has, or skips it), wrong shapes
    asked again; what was typed is returned (not yet written)."""
    have = _read(env_file)
    typed: dict[str, str] = {}
    for secret in secrets:
        value = _prompt(secret, bool(have.get(secret.variable)))
        if value:
            typed[secret.variable] = value
    for _ in range(TRIES - 1):
        wrong = shape_problems(config, {**have, **typed}, set(typed))
        if not wrong:
            break
        for secret in (s for s in secrets if s.variable in wrong):
            typer.echo(f"{secret.variable} {wrong[secret.variable]}")
            value = _prompt(secret, False)
            if value:
                typed[secret.variable] = value
    return typed


def _prompt(secret: Secret, kept: bool) -> str:
    hint = "Enter keeps the one in .env" if kept else "Enter skips it: fill it in .env later"
    answer = typer.prompt(
        f"{secret.variable} ({secret.how}; typing is hidden; {hint})", default="", show_default=False, hide_input=True
    )
    return str(answer).strip()


def shape_problems(config: Path, values: Mapping[str, str], variables: set[str]) -> dict[str, str]:
    """Variable → what is wrong with its shape (offline), for the ``variables`` given; a problem names its
    variable (``…: set SLACK_BOT_TOKEN to …``) and is said without the value."""
    try:
        settings = load_settings(config, env=dict(values), require_secrets=False, user_config=config / "none")
    except ConfigError as exc:
        named = [v for v in variables if v in str(exc)]
        return {name: f"is not valid here: {_without(str(exc), values)}" for name in named}
    found: dict[str, str] = {}
    for name in settings.channels.enabled():
        for problem in settings.channels.section(name).problems():
            head, _, fix = problem.partition(": set ")
            named = VARIABLE.findall(fix)[:1]  # the variable the fix sets (a "swapped" text names two)
            for variable in named:
                if variable in variables and variable not in found:
                    found[variable] = head.split(" ", 1)[1] if " " in head else head
    return found


def _without(text: str, values: Mapping[str, str]) -> str:
    for value in values.values():
        if len(value) >= 4:
            text = text.replace(value, "…")
    return text


def write_secrets(env_file: Path, values: Mapping[str, str]) -> None:
    """Set each variable in ``env_file`` (created with mode 600; other lines kept, a value given replaces one)."""
    if not env_file.exists():
        env_file.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for variable, value in values.items():
        # Unquoted where nothing needs quoting: `docker run --env-file` keeps quotes as part of the value.
        plain = value and not any(c.isspace() or c in "'\"#$\\`" for c in value)
        set_key(env_file, variable, value, quote_mode="never" if plain else "always")
    env_file.chmod(0o600)


def _read(env_file: Path) -> dict[str, str]:
    if not env_file.is_file():
        return {}
    return {k: v for k, v in dotenv_values(env_file).items() if v}


def check_secrets(config: Path) -> int:
    """Test what the bot would use (the project's ``.env``, exported variables winning) against the platforms and
    the model; prints ``bot doctor``'s lines for them and returns how many failed."""
    from bot.cli.doctor import report, secret_checks

    try:
        settings = load_settings(config, require_secrets=False)
    except ConfigError as exc:
        typer.echo(f"✗ config: {exc}")
        return 1
    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # the lines say it; a client's retry warnings would only repeat it
    try:
        lines = asyncio.run(secret_checks(settings, CHECK_TIMEOUT_S))
    finally:
        quiet.setLevel(level)
    text, _ = report(lines)
    failed = sum(line.status == "fail" for line in lines)
    typer.echo("\n".join(text.splitlines()[:-1]))
    return failed
