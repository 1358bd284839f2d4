"""Store fixtures: every contract test runs over SQLite (a temp file) and PostgreSQL.

PostgreSQL is started once per session on a free loopback port in a temp dir
(the server refuses to run as root, so it runs as ``postgres`` then) and each
test gets a fresh database.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.store.sql import SqlStore


def _pg_bindir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").exists() and Path(candidate, "pg_ctl").exists():
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A throw-away PostgreSQL cluster."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="bot-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root}"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return name


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    bindir = _pg_bindir()
    if bindir is None and os.environ.get("CI") == "true" and os.geteuid() == 0:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]):
            subprocess.run(cmd, capture_output=True, timeout=600, check=False)
        bindir = _pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH); "
            "install the postgresql package (CI=true as root installs it automatically)"
        )
    server = PostgresServer(bindir)
    try:
        server.start()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = server.root / "log"
        detail = log.read_text() if log.exists() else getattr(exc, "stderr", b"").decode(errors="replace")
        server.stop()
        pytest.fail(f"could not start PostgreSQL: {exc}\n{detail}")
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind."""
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
