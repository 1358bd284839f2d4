"""`bot run` keeps serving when stdin closes, answers `bot health`, and drains on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_serves_health_until_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    env.update(HOME=str(tmp_path), BOT_HTTP__ENABLED="true", BOT_HTTP__PORT=str(port))
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        health = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            health = subprocess.run(
                [sys.executable, "-m", "bot.cli", "health"],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=30,
            )
            if health.returncode == 0:
                break
            time.sleep(0.2)
        assert health is not None and health.returncode == 0, health.stderr if health else "no health check ran"
        assert '"status": "ok"' in health.stdout
        assert proc.poll() is None, "stdin closed must not stop `bot run`"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    unhealthy = subprocess.run(
        [sys.executable, "-m", "bot.cli", "health"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30
    )
    assert unhealthy.returncode == 1 and "unhealthy" in unhealthy.stderr
