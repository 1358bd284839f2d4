"""``bot doctor --fix``: what can be fixed safely, done before the checks run, each said in one line.

Safe means: nothing is overwritten or deleted, no secret is invented, nothing leaves this machine. So it
creates the folders the configuration names that do not exist (the data dir, the agent folders, the tools'
workspace), migrates the database to this version (SQLite: created if absent; PostgreSQL: when reachable), and
writes a missing ``.env`` from the project's ``.env.example`` (mode 600, the values empty for the user to fill).
Everything else stays a ✗ with its fix for a person to apply.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bot.config.envfiles import candidates
from bot.config.own import workspace_path, workspace_problem
from bot.config.paths import project_config, project_dir
from bot.config.settings import ConfigError, Settings, load_settings
from bot.store.sql.migrate import current_revision, head_revision, migrate_url
from bot.store.sql.probe import postgres_reachable


@dataclass(frozen=True)
class Fixed:
    what: str
    done: bool = True
    """False: tried and failed (``what`` says why); the check that follows shows the ✗."""

    def render(self) -> str:
        return f"{'fixed' if self.done else 'could not fix'}: {self.what}"


async def fix(config: Path | None) -> list[Fixed]:
    """Apply the safe fixes for the project ``config`` (or the one found as ``bot`` finds it)."""
    done = _env_file(config)
    try:
        settings = load_settings(config, require_secrets=False)
    except ConfigError:
        return done  # the configuration is for a person to fix; the check says how
    done += _folders(settings)
    done += await _migrate(settings)
    return done


def _env_file(config: Path | None) -> list[Fixed]:
    """``.env`` from ``.env.example`` in the project folder, when the project has an example and no ``.env``."""
    try:
        file = config if config is not None else project_config(os.environ)
    except ConfigError:
        return []
    if file is None or not file.is_file():
        return []
    folder = project_dir(file)
    example, target = folder / ".env.example", folder / ".env"
    if not example.is_file() or any(path.is_file() for path in candidates(file)):
        return []
    text = example.read_text(encoding="utf-8")
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    empty = [line.split("=", 1)[0] for line in text.splitlines() if line.endswith("=") and not line.startswith("#")]
    fill = f"; fill in {', '.join(empty)}" if empty else ""
    return [Fixed(f"wrote {target} from {example.name} (mode 600){fill}")]


def _folders(settings: Settings) -> list[Fixed]:
    wanted = [("store.data_dir", Path(settings.store.data_dir))]
    wanted += [("agents.dirs", Path(d)) for d in settings.agents.dirs]
    if workspace_problem(settings) is None:  # never create a workspace that holds the bot's files
        wanted.append(("tools.workspace", workspace_path(settings)))
    done = []
    for key, folder in wanted:
        folder = folder.expanduser().absolute()
        if folder.exists():
            continue
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            done.append(Fixed(f"{key}: cannot create {folder} ({exc.strerror})", done=False))
        else:
            done.append(Fixed(f"{key}: created {folder}"))
    return done


async def _migrate(settings: Settings) -> list[Fixed]:
    url = settings.store.database_url()
    shown, head = url.split("@")[-1], head_revision()
    if not url.startswith("sqlite") and await postgres_reachable(url) is not None:
        return []  # the database check says why it cannot be reached
    try:
        revision = await current_revision(url)
        if revision is not None and revision >= head:
            return []  # current, or newer than this version: only an upgrade fixes that
        await migrate_url(url)
    except Exception as exc:  # the store's own error, reported like the check would
        return [Fixed(f"database: migrating {shown} failed ({exc.__class__.__name__}: {exc})", done=False)]
    return [Fixed(f"database: {shown} migrated from {revision or 'empty'} to {head}")]
