"""The response cache of ``bot eval`` (:mod:`bot.evals.cache`): answers by key in one SQLite file under
``data_dir/evals/cache``, apart from the bot's database (a cache a teammate may delete at any time, shared by the
trials of a run and by runs side by side: WAL).  It holds answers only, never a request, a header or a key."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CACHE_FILE = "answers.sqlite"
KEEP_DAYS = 30
"""An answer of the cache not used for this long is removed when a run opens the cache."""


class ResponseCache:
    """The answers of earlier runs, in one SQLite file (WAL: trials of one run and runs side by side share it).

    The file is made when the first answer is kept (a run of the offline or scripted model leaves none); one that
    cannot be opened is said once, and the run asks the models."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / CACHE_FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    async def get(self, key: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._get, key)

    async def put(self, key: str, model: str, answer: dict[str, Any]) -> None:
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        await asyncio.to_thread(self._put, key, model, text)

    def _get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            db = self._open(create=False)
            if db is None:
                return None
            row = db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE answers SET used = ? WHERE key = ?", (time.time(), key))
        found: dict[str, Any] = json.loads(row[0])
        return found

    def _put(self, key: str, model: str, text: str) -> None:
        now = time.time()
        with self._lock:
            db = self._open(create=True)
            if db is not None:
                db.execute(
                    "INSERT OR REPLACE INTO answers (key, model, answer, stored, used) VALUES (?, ?, ?, ?, ?)",
                    (key, model, text, now, now),
                )

    def _open(self, *, create: bool) -> sqlite3.Connection | None:
        if self._db is not None or self._broken or not (create or self.path.exists()):
            return self._db
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fresh = not self.path.exists()
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            if fresh:
                os.chmod(self.path, 0o600)  # answers to the suite's conversations: the owner's only
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "answer TEXT NOT NULL, stored REAL NOT NULL, used REAL NOT NULL)"
            )
            db.execute("DELETE FROM answers WHERE used < ?", (time.time() - KEEP_DAYS * 86400,))
        except (OSError, sqlite3.Error) as exc:
            self._broken = True
            log.warning("eval cache %s cannot be used (%s): every model call goes to the model", self.path, exc)
            return None
        self._db = db
        return db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def clear_cache(folder: Path) -> int:
    """Remove the cache in ``folder``; how many answers it held."""
    path = folder / CACHE_FILE
    if not path.exists():
        return 0
    count = 0
    try:
        db = sqlite3.connect(path, timeout=30)
        try:
            count = int(db.execute("SELECT count(*) FROM answers").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        pass  # not a cache (any more): removed all the same
    for name in (CACHE_FILE, f"{CACHE_FILE}-wal", f"{CACHE_FILE}-shm"):
        (folder / name).unlink(missing_ok=True)
    return count
