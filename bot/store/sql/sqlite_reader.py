"""The SQLite read path: cache misses only, on a second connection and a thread of its own.

Reads neither block the event loop nor queue behind the writer (:mod:`bot.store.sql.sqlite_writer`); WAL lets them
read while the writer commits.
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bot.store.base import StoreError
from bot.store.sql.sqlite import reader_connection


class SqliteReader:
    """The read path: its own connection on its own thread."""

    def __init__(self, path: str, *, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-read")
        self._conn: sqlite3.Connection | None = None
        self.reads = 0

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._conn = await loop.run_in_executor(self._executor, self._connect)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        return reader_connection(self.path, busy_timeout_ms=self.busy_timeout_ms)

    async def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.reads += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._fetch, sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"could not read from the database: {exc}") from exc

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn.execute(sql, params).fetchall()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)
