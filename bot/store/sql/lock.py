"""One gateway process per SQLite file.

Two processes writing one SQLite database would both start and diverge (each
keeps its caches, paused runs and timers in memory).  The gateway holds an
exclusive ``flock`` on ``<database>.lock`` while it runs; a second one fails at
start with a message naming the file and the process holding it.  The kernel
drops the lock when the holder exits, however it exits (even ``kill -9``), so a
stale file never blocks a restart.  PostgreSQL is the way to run several
processes.  Read-only tools (``bot trace``) do not take the lock.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from bot.store.base import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one process is the operator's job
    fcntl = None  # type: ignore[assignment]


class DatabaseInUse(StoreError):
    """Another process holds the database (the message names it)."""


class ProcessLock:
    """An exclusive lock on ``path`` held by this process until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, database: str) -> None:
        if fcntl is None or self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(fd)
            os.close(fd)
            raise DatabaseInUse(
                f"the database {database} is in use by another bot process ({holder}); stop it first, or run "
                "several processes on PostgreSQL (store.url: postgresql://…)"
            ) from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "argv": sys.argv[:4]}
        os.write(fd, json.dumps(owner).encode())
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing drops the lock; the file stays (removing it would race a new holder)


def _describe(fd: int) -> str:
    try:
        owner = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return "unknown process"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("since", 0)))
    command = " ".join(owner.get("argv") or []) or "?"
    return f"pid {owner.get('pid', '?')} on {owner.get('host', '?')} since {since}: {command}"
