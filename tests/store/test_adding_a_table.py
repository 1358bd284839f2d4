"""The guide's "Adding a store table" (docs/extending.md), done once with a toy ``toy_notes`` table, step by step:
the model, its migration, the value, the port, the SQL repository, a service typed on the port, the fake, and the
contract test that holds the fake to SQLite and PostgreSQL.  The model sits on a private ``MetaData`` (not the
bot's) so the real schema test does not see it; everything else is what a real table does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Column, DateTime, MetaData, String, Table
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store.sql.engine import SqlEngine
from bot.store.sql.migrate import async_url
from bot.store.sql.ops import Step

NOW = datetime(2026, 12, 7, 9, 0)

# 1. Model (in the bot: a SQLModel class in bot/store/sql/tables.py)
TOY = MetaData()
Table(
    "toy_notes",
    TOY,
    Column("chat_key", String, primary_key=True),
    Column("text", String, nullable=False),
    Column("updated_at", DateTime, nullable=False),
)


# 2. Migration (in the bot: bot/store/sql/migrations/versions/NNNN_notes.py, its upgrade())
def upgrade(op: Operations) -> None:
    op.create_table(
        "toy_notes",
        Column("chat_key", String, primary_key=True),
        Column("text", String, nullable=False),
        Column("updated_at", DateTime, nullable=False),
    )


# 3. Value (in the bot: bot/store/values.py)
@dataclass(frozen=True, slots=True)
class Note:
    text: str
    updated_at: datetime


# 4. Port (in the bot: bot/store/ports.py)
class NoteRepo(Protocol):
    async def get(self, chat_key: str) -> Note | None: ...

    async def put(self, chat_key: str, text: str, now: datetime) -> None: ...


# 5. SQL repository (in the bot: bot/store/sql/repos/notes.py, and a cached_property of SqlRepos)
class SqlNotes:
    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    async def get(self, chat_key: str) -> Note | None:
        rows = await self.store.read("SELECT text, updated_at FROM toy_notes WHERE chat_key = ?", (chat_key,))
        return Note(rows[0][0], _naive(rows[0][1])) if rows else None

    async def put(self, chat_key: str, text: str, now: datetime) -> None:
        await self.store.write(
            [
                Step("DELETE FROM toy_notes WHERE chat_key = ?", (chat_key,)),
                Step("INSERT INTO toy_notes (chat_key, text, updated_at) VALUES (?, ?, ?)", (chat_key, text, now)),
            ]
        )


def _naive(value: Any) -> datetime:
    """SQLite hands the stamp back as text, PostgreSQL as a datetime."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


# 6. Wire: a service typed on the port (the composition root hands it repos.notes)
class NoteService:
    def __init__(self, notes: NoteRepo) -> None:
        self.notes = notes

    async def remember(self, chat_key: str, text: str, now: datetime) -> str:
        before = await self.notes.get(chat_key)
        await self.notes.put(chat_key, text, now)
        return f"replaced “{before.text}”" if before else "noted"


# 7. Fake (in the bot's tests: tests/fakes/)
class FakeNotes:
    def __init__(self) -> None:
        self.rows: dict[str, Note] = {}

    async def get(self, chat_key: str) -> Note | None:
        return self.rows.get(chat_key)

    async def put(self, chat_key: str, text: str, now: datetime) -> None:
        self.rows[chat_key] = Note(text, now)


def _migrate(connection: Connection) -> None:
    upgrade(Operations(MigrationContext.configure(connection)))


def _differences(connection: Connection) -> list[Any]:
    """What autogenerate finds between the toy model and the database (the bot's own tables left out)."""
    only_toy = {"include_name": lambda name, kind, _parents: kind != "table" or name == "toy_notes"}
    return list(compare_metadata(MigrationContext.configure(connection, opts=only_toy), TOY))


async def _run_sync(url: str, work: Callable[[Connection], Any]) -> Any:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(work)
    finally:
        await engine.dispose()


# 8. Contract test: the same assertions of SQLite, PostgreSQL and the fake
@pytest.fixture(params=["sql", "fake"])
async def notes(request: pytest.FixtureRequest, db_url: str, make_store: Callable[..., Any]) -> NoteRepo:
    if request.param == "fake":
        return FakeNotes()
    store = await make_store()  # the bot's migrations first, then the new one
    assert [d[0] for d in await _run_sync(db_url, _differences)] == ["add_table"], "a model without migration shows"
    await _run_sync(db_url, _migrate)
    assert await _run_sync(db_url, _differences) == [], "the migration makes exactly the model's table"
    return SqlNotes(store)


async def test_a_new_table_through_its_port(notes: NoteRepo) -> None:
    service = NoteService(notes)
    assert await notes.get("console:a") is None
    assert await service.remember("console:a", "buy milk", NOW) == "noted"
    assert await service.remember("console:a", "buy bread", NOW) == "replaced “buy milk”"
    assert await notes.get("console:a") == Note("buy bread", NOW)
    assert await notes.get("console:b") is None, "one chat's note is not another's"


def test_the_toy_follows_the_guide() -> None:
    """The guide still names the places this toy stands in for."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    section = guide.split("## Adding a store table", 1)[1].split("\n## ", 1)[0]
    for place in (
        "bot/store/sql/tables.py",
        "bot/store/sql/migrations/versions/",
        "bot/store/values.py",
        "bot/store/ports.py",
        "bot/store/sql/repos/",
        "tests/fakes/",
        "tests/store/test_repo_contract.py",
        "tests/store/test_adding_a_table.py",
    ):
        assert place in section, place
    for place in ("bot/store/sql/tables.py", "bot/store/values.py", "bot/store/ports.py", "bot/store/sql/repos"):
        assert (Path(__file__).resolve().parents[2] / place).exists(), place
