"""``bot run --role``: what each role needs, said clearly; a worker started from the command line serves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bot.config.settings import ConfigError, load_settings
from tests.fakes.servers import PostgresServer, RedisServer
from tests.helpers.net import free_port
from tests.waiting import eventually_sync


def bot(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "REDIS_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**clean, "HOME": str(tmp_path), **env},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def holds_all(port: int, partitions: int = 8) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return bool(json.loads(response.read()).get("partitions") == partitions)
    except OSError:
        return False


def test_a_worker_needs_the_bus(tmp_path: Path) -> None:
    result = bot(tmp_path, "run", "--role", "worker")
    assert result.returncode == 2
    assert "--role worker" in result.stderr and "bus.url" in result.stderr and "store.url" in result.stderr


def test_an_unknown_role_is_refused(tmp_path: Path) -> None:
    result = bot(tmp_path, "run", "--role", "supervisor")
    assert result.returncode == 2 and "--role must be one of all, gateway, worker" in result.stderr


def test_the_bus_refuses_sqlite(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"SQLite is one process's file: set store.url"):
        load_settings(None, env={"REDIS_URL": "redis://127.0.0.1:6379/0"}, user_config=tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="is not a Redis URL"):
        load_settings(
            None,
            env={"REDIS_URL": "http://x", "DATABASE_URL": "postgresql://u:p@h/db"},
            user_config=tmp_path / "none.yaml",
        )


def test_the_redis_password_is_a_secret(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        env={"REDIS_URL": "redis://:s3cret-pass@127.0.0.1:6379/0", "DATABASE_URL": "postgresql://u:pgpass@h/db"},
        user_config=tmp_path / "none.yaml",
    )
    assert {"s3cret-pass", "pgpass"} <= settings.secrets()
    assert "s3cret-pass" not in json.dumps(settings.redacted())


def test_a_worker_from_the_command_line_holds_every_partition(
    tmp_path: Path, postgres: PostgresServer, redis: RedisServer
) -> None:
    redis.flush()
    port = free_port()
    env = {
        "REDIS_URL": redis.url(),
        "DATABASE_URL": postgres.url(postgres.create_database()),
        "BOT_HTTP__ENABLED": "true",
        "BOT_HTTP__PORT": str(port),
        "BOT_BUS__PARTITIONS": "8",
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "REDIS_", "DATABASE_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--role", "worker"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**clean, "HOME": str(tmp_path), **env},
    )
    try:
        eventually_sync(lambda: holds_all(port), every=0.05, what="the worker to hold all 8 partitions")
        health = bot(tmp_path, "health", "--url", f"http://127.0.0.1:{port}/healthz")
        body = json.loads(health.stdout)
        assert body.get("status") == "ok" and body.get("role") == "worker" and body.get("partitions") == 8, body
    finally:
        proc.send_signal(15)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Starting a worker" in err
