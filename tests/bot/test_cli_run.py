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
        [sys.executable, "-m", "bot", "run"],
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
                [sys.executable, "-m", "bot", "health"],
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
        [sys.executable, "-m", "bot", "health"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30
    )
    assert unhealthy.returncode == 1 and "unhealthy" in unhealthy.stderr


def test_sigterm_ends_the_process_within_five_seconds_whatever_is_running(tmp_path: Path) -> None:
    """A model call that never returns, a 1 MB message in the pipe: SIGTERM still ends `bot run` in 5 s."""
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)  # accepts connections and never answers: a model call that hangs
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    env.update(
        HOME=str(tmp_path),
        GEMINI_API_KEY="test-key-0123",
        GEMINI_BASE_URL=f"http://127.0.0.1:{hung.getsockname()[1]}",
        BOT_ROUTING__STRATEGY="rule",
        BOT_LOG__LEVEL="WARNING",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("x" * 1_000_000 + "\n")  # refused at the door ("too long")
        proc.stdin.write("tell me a story\n")  # its model call hangs
        proc.stdin.flush()
        hung.settimeout(30)
        connection, _ = hung.accept()  # the model call is in flight now
        too_long = proc.stdout.readline()
        assert "too long" in too_long, too_long
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        elapsed = time.monotonic() - started
        assert elapsed < 5.0, f"took {elapsed:.1f} s to stop"
        assert code in (0, 1)
        connection.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hung.close()
