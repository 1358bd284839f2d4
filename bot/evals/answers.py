"""Where ``bot eval``'s recorded answers are kept: the response cache (:class:`ResponseCache`, a SQLite file under
``data_dir/evals/cache``) and cassettes (:class:`Cassette`, one portable JSONL file a teammate replays offline).

Both hold answers by key (a digest of the model and the request: :mod:`bot.evals.cache`); neither holds a request,
a header or a key.  A cassette's first line says what it is and its version; each further line is one answer with
where it was asked (case, model, attempt, turn), in the run's order.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bot.redaction import Redaction

log = logging.getLogger(__name__)

CASSETTE_FORMAT = "bot-eval-cassette"
CASSETTE_VERSION = 1
CACHE_FILE = "answers.sqlite"
KEEP_DAYS = 30
"""An answer of the cache not used for this long is removed when a run opens the cache."""


class CassetteError(ValueError):
    """A cassette that cannot be read (``bot eval --replay`` exits 2)."""


class AnswerSource(Protocol):
    """Recorded answers by key."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, model: str, answer: dict[str, Any]) -> None: ...


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


def cache_folder(data_dir: Path) -> Path:
    """Where ``bot eval`` keeps its response cache."""
    return data_dir / "evals" / "cache"


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


@dataclass
class Recorded:
    """One answer of a cassette and where it was asked."""

    key: str
    model: str
    answer: dict[str, Any]
    case: str = ""
    attempt: int = 1
    turn: int = 0
    order: tuple[str, str, int, int] = ("", "", 0, 0)
    """Case, model, attempt and the call's number in its trial: a cassette lists its answers in this order."""


@dataclass
class Cassette:
    """Answers by key: filled by a run (``--record``) and written, or read (``--replay``) and answered from."""

    suite: str = ""
    entries: dict[str, Recorded] = field(default_factory=dict)
    secrets: Iterable[str] = ()
    """Values a written cassette never holds (the configured secrets; what looks like a key or password)."""

    async def get(self, key: str) -> dict[str, Any] | None:
        found = self.entries.get(key)
        return found.answer if found is not None else None

    async def put(self, key: str, model: str, answer: dict[str, Any]) -> None:
        self.add(Recorded(key, model, answer))

    def add(self, entry: Recorded) -> None:
        self.entries.setdefault(entry.key, entry)

    def lines(self) -> list[str]:
        step = Redaction(self.secrets)
        head = {"format": CASSETTE_FORMAT, "version": CASSETTE_VERSION, "suite": self.suite}
        out = [json.dumps(head, ensure_ascii=False)]
        for entry in sorted(self.entries.values(), key=lambda e: e.order):
            line = {
                "key": entry.key,
                "model": entry.model,
                "case": entry.case,
                "attempt": entry.attempt,
                "turn": entry.turn,
                "answer": step.value(entry.answer),
            }
            out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
        return out

    def write(self, path: Path) -> None:
        """Write the cassette (whole or not at all: a temporary file renamed over ``path``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text("\n".join(self.lines()) + "\n", encoding="utf-8")
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """The cassette in ``path``; :class:`CassetteError` saying what is wrong (and on which line)."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CassetteError(f"--replay {path}: no such file (write one with --record)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CassetteError(f"--replay {path}: cannot be read ({exc})") from None
        lines = text.splitlines()
        try:
            head = json.loads(lines[0]) if lines else None
        except ValueError:
            head = None
        if not isinstance(head, dict) or head.get("format") != CASSETTE_FORMAT:
            raise CassetteError(f"--replay {path}: not a cassette (line 1 does not say format: {CASSETTE_FORMAT})")
        if head.get("version") != CASSETTE_VERSION:
            raise CassetteError(
                f"--replay {path}: cassette version {head.get('version')!r}; this bot reads version "
                f"{CASSETTE_VERSION} (record it again with --record)"
            )
        cassette = cls(suite=str(head.get("suite") or ""))
        for number, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                entry = Recorded(
                    key=str(data["key"]),
                    model=str(data.get("model") or ""),
                    answer=dict(data["answer"]),
                    case=str(data.get("case") or ""),
                    attempt=int(data.get("attempt") or 1),
                    turn=int(data.get("turn") or 0),
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise CassetteError(f"--replay {path}, line {number}: not an answer ({exc})") from None
            cassette.add(entry)
        return cassette
