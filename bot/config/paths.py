"""Relative paths in a config file mean the same wherever ``bot`` is started.

``bot doctor -c /x/config/bot.yaml`` run from another folder must find ``/x/config/agents`` and ``/x/data``,
not the working directory's. So a relative path set in a file (or left at its built-in default while a project
file is in use) is made absolute against that file's **project folder**: the folder holding ``config/`` for a file
inside a folder named ``config`` (``/x/config/bot.yaml`` → ``/x``: the layout ``bot init`` writes, whose
``data_dir: data`` and agent folder ``config/agents`` are written from there), else the file's own folder. A path
from the environment (``BOT_STORE__DATA_DIR=data``) stays relative to the working directory, as a shell means it.

Which project: without ``--config``, the first folder from the working directory up that holds ``config/bot.yaml``
(:func:`find_project`, as git finds ``.git``), so ``bot`` run in a project's subfolder uses that project's file and
data, not built-in defaults and a new ``data/`` there; ``BOT_HOME=DIR`` names the folder instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bot.errors import ConfigError

PROJECT_FILE = Path("config") / "bot.yaml"
"""A project folder's configuration, relative to that folder."""
HOME_VARIABLE = "BOT_HOME"

PATH_KEYS = ("store.data_dir", "store.url", "agents.dirs", "agents.user_dir", "tools.workspace")
"""The keys that hold paths (``store.url`` when it is ``sqlite:///relative``); ``mcp.servers.<name>.cwd`` too."""


def project_dir(config: Path) -> Path:
    """The folder ``config``'s relative paths (and its ``.env``) belong to."""
    folder = config.absolute().parent
    return folder.parent if folder.name == "config" else folder


def find_project(start: Path, home: Path | None = None) -> Path | None:
    """``config/bot.yaml`` of the first folder from ``start`` up that holds one, or None.

    The walk stops at the filesystem root or at ``home``'s parent (neither is looked in): a project is never
    taken from above the user's home (``/home/config/bot.yaml``) nor from ``/``. A file in ``start`` itself is
    returned relative (``config/bot.yaml``, as messages have always named it), one above it absolute.
    """
    start = start.absolute()
    ceiling = (home or Path.home()).absolute().parent
    for folder in (start, *start.parents):
        if folder == folder.parent or ceiling.is_relative_to(folder):
            return None
        if (folder / PROJECT_FILE).is_file():
            return PROJECT_FILE if folder == start else folder / PROJECT_FILE
    return None


def project_config(environ: Mapping[str, str]) -> Path | None:
    """The project file used without ``--config``: ``$BOT_HOME/config/bot.yaml``, else :func:`find_project` from
    the working directory. A ``BOT_HOME`` without that file is an error (never a silent fallback)."""
    named = environ.get(HOME_VARIABLE, "").strip()
    if not named:
        return find_project(Path.cwd())
    file = Path(named).expanduser() / PROJECT_FILE
    if not file.is_file():
        raise ConfigError(
            f"{HOME_VARIABLE}={named}: {file} does not exist; `bot init --dir {named}` writes one "
            f"(or unset {HOME_VARIABLE} to use the project of the working directory)"
        )
    return file


def anchor_paths(merged: dict[str, Any], origin_of: Callable[[str], str], bases: Mapping[str, Path]) -> None:
    """Make the relative paths in ``merged`` absolute against ``bases[layer]`` of the layer that set them.

    ``origin_of(dotted)`` names the layer that set a key; a layer without a base (the environment) is left alone,
    and so is a base that is the working directory (the path already means that).
    """
    here = Path.cwd().resolve()
    useful = {layer: base for layer, base in bases.items() if base.resolve() != here}
    if not useful:
        return
    keys = list(PATH_KEYS)
    servers = (merged.get("mcp") or {}).get("servers") or {}
    if isinstance(servers, dict):
        keys += [f"mcp.servers.{name}.cwd" for name in servers]
    for dotted in keys:
        base = useful.get(origin_of(dotted))
        if base is None:
            continue
        *parents, leaf = dotted.split(".")
        section: Any = merged
        for part in parents:
            section = section.get(part) if isinstance(section, dict) else None
        if not isinstance(section, dict) or section.get(leaf) is None:
            continue
        value = section[leaf]
        section[leaf] = [_anchor(v, base) for v in value] if isinstance(value, list) else _anchor(value, base)


def _anchor(value: Any, base: Path) -> Any:
    text = str(value)
    if text.startswith("sqlite:///"):
        rest = text.removeprefix("sqlite:///")
        if not rest or rest.startswith("/") or rest.startswith(":memory:"):
            return value
        return f"sqlite:///{base / rest}"
    if "://" in text or text.startswith("~") or Path(text).is_absolute():
        return value
    return str(base / text)
