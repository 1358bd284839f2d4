"""A started SQL store on SQLite (a temp file) or PostgreSQL (a fresh database of the session's server), for the
contract suites that run one test over ``sqlite``, ``postgres`` and ``fake`` (``tests/store/test_*_contract.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer

KINDS = ["sqlite", "postgres", "fake"]
"""The params of a contract fixture: each database, then the fake."""


@asynccontextmanager
async def started_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStore]:
    """A started store of ``kind`` (``sqlite`` or ``postgres``), closed after."""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'bot.db'}"
    else:
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.url(server.create_database())
    store = SqlStore(url)
    await store.start()
    try:
        yield store
    finally:
        await store.close()
