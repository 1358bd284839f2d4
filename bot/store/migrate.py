"""Alembic migrations, applied at start-up before the store opens its own connections."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

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


def _upgrade(connection: Connection) -> None:
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
    engine = create_async_engine(async_url(url))
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
