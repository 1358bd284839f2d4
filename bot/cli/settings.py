"""How every ``bot`` command reads its settings: ``-c FILE`` before or after the command name.

``bot -c FILE config show`` and ``bot config show -c FILE`` mean the same; a ``-c`` that
names no file is an error either way (never silently ignored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from bot.config.settings import ConfigError, Settings, load_settings

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Project config file (default: config/bot.yaml if present).")
]


def pass_config_down(ctx: typer.Context, config: Path | None) -> None:
    """Make the top-level ``-c`` every subcommand's default ``--config`` (click's ``default_map``)."""
    if config is not None:
        ctx.default_map = _defaults(ctx.command, str(config))


def _defaults(command: Any, config: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, sub in (getattr(command, "commands", None) or {}).items():
        if getattr(sub, "commands", None):
            out[name] = _defaults(sub, config)
        elif any(getattr(p, "name", None) == "config" for p in sub.params):
            out[name] = {"config": config}
    return out


def cli_settings(config: Path | None, **overrides: object) -> Settings:
    """The settings for a command: its ``--config`` (which the top-level ``-c`` fills in), else the usual layers."""
    try:
        return load_settings(config, overrides=overrides or None)
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None
