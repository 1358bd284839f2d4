"""The bot's own files, which no tool may touch, and whether the tools' workspace holds any of them.

The file tools, ``send_file`` and ``run_command`` work in ``tools.workspace``.  A workspace that holds the bot's
data dir (its database, media, logs), its configuration, the ``.env`` files the settings read, or its agent
folders would hand them to the model: an approved command could read the tokens in ``.env``, query the live
database, or change the configuration the next start reads.  So a workspace that *contains* (or is) one of them
is refused at start-up (:func:`workspace_problem`, ``bot doctor``); a workspace *inside* one of them (the default
``<data_dir>/workspace``) is fine: nothing leaves the workspace.  Paths that do not exist yet count too: a
``.env`` created in the workspace would be read at the next start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.config.envfiles import candidates
from bot.config.settings import PROJECT_CONFIG, USER_CONFIG, Settings

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class OwnPath:
    path: Path
    """Absolute, resolved (it need not exist)."""
    what: str
    """What it is, for a message: ``store.data_dir``, ``a .env file the settings read``."""


def own_paths(settings: Settings) -> list[OwnPath]:
    """The bot's own files and folders: data dir, database, configuration, ``.env`` files, agent folders."""
    found = [OwnPath(settings.store.data_dir, "store.data_dir: the database, media, logs")]
    scheme, _, rest = settings.store.database_url().partition(":///")
    if scheme in ("sqlite", "sqlite+aiosqlite") and rest and not rest.startswith(":memory:"):
        database = Path(rest.split("?", 1)[0])
        found += [OwnPath(Path(f"{database}{end}"), "the database (store.url)") for end in ("", *SQLITE_SIDE_FILES)]
    project = settings.project_file
    if project is not None:
        folder = project.parent
        found.append(OwnPath(folder if folder.name == "config" else project, "the project configuration"))
    found.append(OwnPath(PROJECT_CONFIG.parent, "config/ of the working directory (read when no --config is given)"))
    found.append(OwnPath(USER_CONFIG.parent, "the user configuration folder"))
    found += [OwnPath(path, "a .env file the settings read") for path in candidates(project)]
    found += [OwnPath(path, "agents.dirs") for path in settings.agents.dirs]
    found.append(OwnPath(settings.agents.user_dir, "agents.user_dir"))
    unique: dict[Path, OwnPath] = {}
    for own in found:
        path = own.path.expanduser().resolve()
        unique.setdefault(path, OwnPath(path, own.what))
    return list(unique.values())


def workspace_path(settings: Settings) -> Path:
    """``tools.workspace``, absolute and resolved."""
    return Path(settings.tools.workspace).expanduser().resolve()


def in_workspace(settings: Settings) -> list[OwnPath]:
    """The bot's own paths the workspace holds (or is), less those inside another of them."""
    workspace = workspace_path(settings)
    held = [own for own in own_paths(settings) if own.path == workspace or own.path.is_relative_to(workspace)]
    return [own for own in held if not any(own.path != o.path and own.path.is_relative_to(o.path) for o in held)]


WORKSPACE_FIX = "set tools.workspace to a folder that holds none of them (the default is <store.data_dir>/workspace)"


def workspace_problem(settings: Settings) -> str | None:
    """Why the tools' workspace must not be used (it holds the bot's own files, named), or None."""
    held = in_workspace(settings)
    if not held:
        return None
    workspace = workspace_path(settings)
    shown = "; ".join(
        f"{own.path.relative_to(workspace)} ({own.what})" if own.path != workspace else f"itself ({own.what})"
        for own in held[:6]
    )
    more = f"; and {len(held) - 6} more" if len(held) > 6 else ""
    return (
        f"tools.workspace {workspace_path(settings)} holds the bot's own files: {shown}{more}. "
        "The file tools and approved commands could read or change them"
    )
