"""Processes of a scaled-out bot for tests: a gateway and workers (``_process.py``) on one PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import aiohttp

from tests.channels._intake_gateway import WEBHOOK_SECRET
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers.net import free_port
from tests.waiting import CEILING_S, eventually

SCRIPT = Path(__file__).with_name("_process.py")
ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    """A gateway and workers as subprocesses; the fake Telegram in this process."""

    def __init__(self, tmp: Path, fake: FakeTelegram, pg_url: str, redis_url: str, **env: str) -> None:
        self.tmp, self.fake = tmp, fake
        self.port = free_port()
        self.env = {
            **os.environ,
            "PG_URL": pg_url,
            "REDIS_URL": redis_url,
            "FAKE_URL": fake.base_url,
            "DATA_DIR": str(tmp / "data"),
            "HTTP_PORT": str(self.port),
            "COUNT_FILE": str(tmp / "count.txt"),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            **env,
        }
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.http: aiohttp.ClientSession | None = None

    @property
    def webhook(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram/webhook"

    async def start(self, name: str, role: str, **env: str) -> asyncio.subprocess.Process:
        log = (self.tmp / f"{name}.log").open("a")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(SCRIPT), stdout=PIPE, stderr=log, cwd=self.tmp, env={**self.env, "ROLE": role, **env}
        )
        log.close()
        assert proc.stdout is not None
        async with asyncio.timeout(CEILING_S * 2):  # ready in seconds; a busy machine may take many times longer
            line = await proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"{name} exited before it was ready:\n{(self.tmp / f'{name}.log').read_text()[-3000:]}"
            )
        assert json.loads(line)["ready"]
        self.procs[name] = proc
        return proc

    async def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        async with asyncio.timeout(CEILING_S):
            await proc.wait()

    async def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in list(self.procs.items()):
            try:
                async with asyncio.timeout(CEILING_S):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
            del self.procs[name]
        if self.http is not None:
            await self.http.close()

    async def post(self, update: dict[str, Any]) -> bool:
        """Deliver one update as Telegram does; True when answered 200 (else Telegram would retry)."""
        if self.http is None:
            self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        try:
            async with self.http.post(self.webhook, json=update, headers=headers) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    async def deliver(self, update: dict[str, Any]) -> None:
        """Until answered 200 (Telegram's retries, the same update id)."""
        await eventually(lambda: self.post(update), every=0.05, what=f"update {update.get('update_id')} accepted")

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    async def health(self, port: int) -> dict[str, Any]:
        if self.http is None:
            self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        async with self.http.get(f"http://127.0.0.1:{port}/healthz") as response:
            body: dict[str, Any] = await response.json()
            return body
