"""A gateway in a subprocess speaking JSON lines (tests/bot/_crash_gateway.py), to be killed and restarted."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.waiting import CEILING_S

SCRIPT = Path(__file__).parents[1] / "bot" / "_crash_gateway.py"
ROOT = Path(__file__).resolve().parents[2]


class Gateway:
    """One gateway subprocess speaking JSON lines."""

    def __init__(self, tmp: Path, **env: str) -> None:
        full = {**os.environ, "COUNT_FILE": str(tmp / "count.txt"), "DATA_DIR": str(tmp / "data"), **env}
        full["PYTHONPATH"] = str(ROOT) + os.pathsep + full.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp,
            env=full,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.backlog: list[dict[str, Any]] = []
        """Lines read while waiting for another one (recovery may send before "ready")."""
        threading.Thread(target=self._pump, daemon=True).start()
        self.ready = self.expect(lambda m: m.get("ready") is True)

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def expect(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = CEILING_S) -> dict[str, Any]:
        for i, item in enumerate(self.backlog):
            if predicate(item):
                del self.backlog[i]
                return item
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                item = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                stderr = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"gateway exited ({self.proc.wait()}) before the expected line; {stderr[-2000:]}")
            self.seen.append(item)
            if predicate(item):
                return item
            self.backlog.append(item)
        raise AssertionError(f"timed out; saw {self.seen}")

    def send(self, **data: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(data) + "\n")
        self.proc.stdin.flush()

    def killed(self, timeout: float = CEILING_S) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=CEILING_S)


def approve_payload(prompt: dict[str, Any]) -> str:
    return next(b["payload"] for row in prompt["buttons"] for b in row if "Approve" in b["label"])


def count_lines(tmp: Path) -> list[str]:
    path = tmp / "count.txt"
    return path.read_text().splitlines() if path.exists() else []
