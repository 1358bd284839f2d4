"""Store fixtures: every contract test runs over SQLite (a temp file) and PostgreSQL (``db_url``), the contract
suites that hold a fake to the store over both and the fake (``url_or_fake``).

PostgreSQL is started once per session on a free loopback port in a temp dir
(the server refuses to run as root, so it runs as ``postgres`` then) and each
test gets a fresh database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer

KINDS = ["sqlite", "postgres", "fake"]
"""The kinds a contract suite runs each test over (``tests/store/test_*_contract.py``): each database, then the
in-memory fake."""


def _fresh_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of ``kind``: a temp SQLite file, or a new database of the session's PostgreSQL."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.url(server.create_database())


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind."""
    return _fresh_url(request.param, request, tmp_path)


@pytest.fixture(params=KINDS)
def url_or_fake(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """The contract suites' one parameter: a fresh database of each kind, or None for the in-memory fake."""
    return None if request.param == "fake" else _fresh_url(request.param, request, tmp_path)


@pytest.fixture
async def open_store() -> AsyncIterator[Callable[..., Awaitable[SqlStore]]]:
    """``await open_store(url, **options)`` → a started store on ``url``; all closed at the end."""
    opened: list[SqlStore] = []

    async def open_(url: str, **options: Any) -> SqlStore:
        store = SqlStore(url, **options)
        await store.start()
        opened.append(store)
        return store

    yield open_
    for store in opened:
        await store.close()


@pytest.fixture
def make_store(db_url: str, open_store: Callable[..., Awaitable[SqlStore]]) -> Callable[..., Awaitable[SqlStore]]:
    """``await make_store(**options)`` → a started store on ``db_url`` (or ``url=``); all closed at the end."""

    async def make(url: str | None = None, **options: Any) -> SqlStore:
        return await open_store(url or db_url, **options)

    return make
