"""Alembic migrations, applied at start-up before the store opens its own connections.

Alembic (with SQLAlchemy, Mako and Pygments behind it) takes about half a second to
import; a database already at the newest revision is recognised with one query and
none of it is imported.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).with_name("migrations")


def async_url(url: str) -> str:
    """Map ``sqlite:///`` and ``postgresql://`` URLs to their async drivers."""
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


def head_revision() -> str:
    """The newest revision: migration files are named ``NNNN_what.py`` with ``revision = "NNNN"``."""
    return max(p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


async def current_revision(url: str) -> str | None:
    """The database's revision, or None (no database or no migration yet)."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1]
        return await asyncio.to_thread(_sqlite_revision, path)
    import asyncpg

    from bot.store.sql.postgres import dsn_of

    try:
        conn = await asyncpg.connect(dsn_of(url))
    except (OSError, asyncpg.PostgresError):
        return None  # alembic reports the problem
    try:
        return await conn.fetchval("SELECT version_num FROM alembic_version")
    except asyncpg.PostgresError:
        return None
    finally:
        await conn.close()


def _sqlite_revision(path: str) -> str | None:
    if not Path(path).is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return str(row[0]) if row else None


def _upgrade(connection: Connection) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade)


async def migrate_url(url: str) -> None:
    """Migrate the database at ``url`` on a short-lived engine (the store then uses raw drivers)."""
    if await current_revision(url) == head_revision():
        return
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(async_url(url))
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
