"""How every ``bot`` command reads its settings: ``-c FILE`` before or after the command name, ``-C DIR``.

``bot -c FILE config show`` and ``bot config show -c FILE`` mean the same; a ``-c`` that
names no file is an error either way (never silently ignored), exit 2. ``bot -C DIR …`` runs as if started in
``DIR`` (as ``git -C``). Without ``-c`` the project is ``$BOT_HOME``, else the first folder from the working
directory up that holds ``config/bot.yaml``; the commands that create data say so when there is none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.config.settings import ConfigError, Settings, load_settings, missing_config


def _existing(value: Path | None) -> Path | None:
    if value is not None and not value.is_file():
        typer.echo(f"config error: {missing_config(value)}", err=True)
        raise typer.Exit(2)
    return value


def change_directory(value: Path | None) -> Path | None:
    """``-C DIR``: work in ``DIR`` from here on (it is eager: a ``-c`` after it is read from there)."""
    if value is not None:
        try:
            os.chdir(value.expanduser())
        except OSError as exc:
            typer.echo(f"error: -C {value}: {exc.strerror}", err=True)
            raise typer.Exit(2) from None
    return value


ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        callback=_existing,
        help="Project config file (default: $BOT_HOME/config/bot.yaml, else the first config/bot.yaml from here up).",
    ),
]
DirectoryOpt = Annotated[
    Path | None,
    typer.Option(
        "-C",
        callback=change_directory,
        is_eager=True,
        metavar="DIR",
        help="Run as if started in DIR (its project, its relative paths), like git -C.",
    ),
]


def announce_project(settings: Settings) -> None:
    """One line on stderr when no project file is in use: the data is about to go to the working directory's."""
    if settings.project_file is not None:
        return
    data = settings.store.data_dir.expanduser().absolute()
    doing = "using" if data.exists() else "creating"
    typer.echo(
        f"No config/bot.yaml found from {Path.cwd()} up: built-in defaults, {doing} the data folder {data} "
        "(`bot init` writes a project here; `bot -C DIR` uses one elsewhere).",
        err=True,
    )


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


def cli_settings(config: Path | None, *, secrets: bool = True, **overrides: object) -> Settings:
    """The settings for a command: its ``--config`` (which the top-level ``-c`` fills in), else the usual layers.
    ``secrets=False``: a command that only reads the store (``bot pair``) works before the tokens are set."""
    try:
        return load_settings(config, overrides=overrides or None, require_secrets=secrets)
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None
