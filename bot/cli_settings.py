"""How every ``bot`` command reads its settings: ``-c FILE`` before or after the command name.

``bot -c FILE config show`` and ``bot config show -c FILE`` mean the same; a ``-c`` that
names no file is an error either way (never silently ignored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.settings import ConfigError, Settings, load_settings

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Project config file (default: config/bot.yaml if present).")
]

_given: dict[str, Path | None] = {"config": None}
"""The ``-c`` given before the command name (the top-level option), for the command to use."""


def remember_global_config(config: Path | None) -> None:
    _given["config"] = config


def cli_settings(config: Path | None, **overrides: object) -> Settings:
    """The settings for a command: its own ``-c``, else the top-level one, else the usual layers."""
    try:
        return load_settings(config or _given["config"], overrides=overrides or None)
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None
