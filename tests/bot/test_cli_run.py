"""`bot run` keeps serving when stdin closes, answers `bot health`, and drains on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.helpers.net import free_port
from tests.waiting import CEILING_S, eventually_sync


def serving(port: int, proc: subprocess.Popen[str]) -> bool:
    """Whether the process answers /healthz with 200 (an AssertionError if it exited)."""
    assert proc.poll() is None, f"exited with {proc.returncode}"
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


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
        eventually_sync(lambda: serving(port, proc), every=0.05, what="`bot run` to serve /healthz")
        health = subprocess.run(
            [sys.executable, "-m", "bot", "health"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
        )
        assert health.returncode == 0, health.stderr
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


def test_sigterm_ends_the_process_whatever_is_running(tmp_path: Path) -> None:
    """A model call that never returns, a 1 MB message in the pipe: SIGTERM still ends `bot run` (it drains for
    at most ``DRAIN_S`` seconds, then cancels what is left: the hung call would otherwise keep it for ever)."""
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
        hung.settimeout(CEILING_S)
        connection, _ = hung.accept()  # the model call is in flight now
        too_long = proc.stdout.readline()
        assert "too long" in too_long, too_long
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=CEILING_S)
        assert code in (0, 1)
        connection.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hung.close()
