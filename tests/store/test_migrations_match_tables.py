"""The SQLModel tables (bot/store/sql/tables.py) and the Alembic migrations describe the same schema:
autogenerate, run against a database the migrations built, finds nothing to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import DateTime
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

import bot.store.sql.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from bot.store.sql.migrate import async_url, migrate_url


def _same_datetime(context: Any, inspected: Any, metadata: Any, inspected_type: Any, metadata_type: Any) -> bool | None:
    """PostgreSQL reflects ``DateTime()`` as ``TIMESTAMP()``, the same type: not a difference.  Anything else:
    Alembic's own comparison (None)."""
    if isinstance(inspected_type, DateTime) and isinstance(metadata_type, DateTime):
        return bool(inspected_type.timezone) != bool(metadata_type.timezone)
    return None


def _not_search_index(name: str | None, type_: str, parent_names: Any) -> bool:
    """Memory search is made by raw DDL in migration 0008, not a model: SQLite's FTS5 table (and its shadow tables),
    PostgreSQL's generated ``search`` column and its GIN index."""
    if name is None:
        return True
    if type_ == "column" and name == "search" and parent_names.get("table_name") == "memories":
        return False
    return not ((type_ == "table" and name.startswith("memory_index")) or name == "ix_memories_search")


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": _same_datetime, "include_name": _not_search_index}
    )
    return list(compare_metadata(context, SQLModel.metadata))


async def _compare(url: str) -> list[Any]:
    await migrate_url(url)
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_differences)
    finally:
        await engine.dispose()


async def test_sqlite_migrations_match_the_tables(tmp_path: Path) -> None:
    assert await _compare(f"sqlite:///{tmp_path / 'bot.db'}") == []


async def test_postgres_migrations_match_the_tables(postgres: Any) -> None:
    pytest.importorskip("asyncpg")
    assert await _compare(postgres.url(postgres.create_database())) == []


def test_a_difference_would_be_found(tmp_path: Path) -> None:
    """The check is not vacuous: a table the migrations never created is reported."""
    from sqlalchemy import Column, Integer, MetaData, Table, create_engine

    extra = MetaData()
    Table("not_migrated", extra, Column("id", Integer, primary_key=True))
    engine = create_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    with engine.connect() as connection:
        found = compare_metadata(MigrationContext.configure(connection), extra)
    assert [d[0] for d in found] == ["add_table"]
