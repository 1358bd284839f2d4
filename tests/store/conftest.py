"""Store fixtures: every contract test runs over SQLite (a temp file) and PostgreSQL.

PostgreSQL is started once per session on a free loopback port in a temp dir
(the server refuses to run as root, so it runs as ``postgres`` then) and each
test gets a fresh database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.url(server.create_database())


@pytest.fixture(params=["sqlite", "postgres", "fake"])
def url_or_fake(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """A fresh database of each kind, or None: the in-memory fake (the chat store's and run tables' contracts)."""
    if request.param == "fake":
        return None
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.url(server.create_database())


@pytest.fixture
async def make_store(db_url: str) -> AsyncIterator[Callable[..., Any]]:
    """``await make_store(**options)`` → a started store on ``db_url``; all closed at the end."""
    opened: list[SqlStore] = []

    async def make(url: str | None = None, **options: Any) -> SqlStore:
        store = SqlStore(url or db_url, **options)
        await store.start()
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()
