"""Relative paths in a config file mean the same wherever ``bot`` is started.

``bot doctor -c /x/config/bot.yaml`` run from another folder must find ``/x/config/agents`` and ``/x/data``,
not the working directory's. So a relative path set in a file (or left at its built-in default while a project
file is in use) is made absolute against that file's **project folder**: the folder holding ``config/`` for a file
inside a folder named ``config`` (``/x/config/bot.yaml`` → ``/x``: the layout ``bot init`` writes, whose
``data_dir: data`` and agent folder ``config/agents`` are written from there), else the file's own folder. A path
from the environment (``BOT_STORE__DATA_DIR=data``) stays relative to the working directory, as a shell means it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

PATH_KEYS = ("store.data_dir", "store.url", "agents.dirs", "agents.user_dir", "tools.workspace")
"""The keys that hold paths (``store.url`` when it is ``sqlite:///relative``); ``mcp.servers.<name>.cwd`` too."""


def project_dir(config: Path) -> Path:
    """The folder ``config``'s relative paths (and its ``.env``) belong to."""
    folder = config.absolute().parent
    return folder.parent if folder.name == "config" else folder


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
