"""The web console under a full inbox: N chats each wait on a ToolConfirm; an admin signed in over HTTP.

The real gateway (SQLite file store, synchronous=FULL) with the web console on, a recording channel and a
zero-latency model (``bench/interrupts.py``'s).  Prints one JSON line: the inbox page and its live fragment
(p50/p99 ms with N requests waiting), the live-update check the event stream runs every second, and answers
given in the console (each one a POST that waits until the chat's turn resolved it: p50/p99 ms, answers/s).

    python bench/console.py [--pending 200] [--answers 100]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runnable from a checkout

from bot.config.settings import load_settings  # noqa: E402
from bot.events import ChatKey, InboundMessage, Sender  # noqa: E402
from bot.gateway.app import Gateway  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_interrupts", ROOT / "bench" / "interrupts.py")
assert _spec is not None and _spec.loader is not None
interrupts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(interrupts)

TOKEN = "bench-console-token-0123456789"


def percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p99_ms": round(samples[max(0, int(len(samples) * 0.99) - 1)], 2),
    }


async def timed_get(http: aiohttp.ClientSession, url: str, times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        async with http.get(url) as response:
            assert response.status == 200, response.status
            await response.read()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def run(pending: int, answers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        settings = load_settings(
            None,
            env={},
            user_config=Path(tmp) / "none.yaml",
            overrides={
                "store": {"data_dir": str(Path(tmp) / "data"), "retention_interval_s": 3600},
                "agents": {"dirs": []},
                "log": {"level": "WARNING"},
                "http": {"enabled": True, "port": 0},
                "web": {"enabled": True, "token": TOKEN},
            },
        )
        channel = interrupts.Channel()
        gateway = Gateway(settings, model=interrupts.InstantModel(), channels=[channel], tools=[interrupts.purge])
        await gateway.start()
        try:
            prompts = []
            for i in range(pending):
                chat = f"c{i}"
                prompts.append(channel.expect(chat))
                await gateway.inbox.submit(
                    InboundMessage(
                        id=f"{chat}-m",
                        chat=ChatKey(channel="console", chat_id=chat),
                        sender=Sender(id=f"user-{chat}"),
                        text="@react purge the cache",
                        is_direct=True,
                    )
                )
            await asyncio.gather(*prompts)
            assert gateway.http is not None and gateway.web is not None
            base = f"http://127.0.0.1:{gateway.http.port}/web"
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
                async with http.get(base + "/login") as response:
                    csrf = re.search(r'name="csrf" value="([^"]+)"', await response.text())
                assert csrf is not None
                async with http.post(base + "/login", data={"csrf": csrf.group(1), "password": TOKEN}) as response:
                    page = await response.text()
                assert "Waiting on a person" in page
                inbox = await timed_get(http, base + "/", 20)
                items = await timed_get(http, base + "/inbox/items", 20)
                version = []
                for _ in range(50):
                    started = time.perf_counter()
                    await gateway.web.data.version()
                    version.append((time.perf_counter() - started) * 1000)
                session_csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                assert session_csrf is not None
                rows = (await gateway.runs.all_pending())[:answers]
                answered = []
                started_all = time.perf_counter()
                for row in rows:
                    started = time.perf_counter()
                    form = {"csrf": session_csrf.group(1), "nonce": row.nonce, "choice": "a"}
                    async with http.post(f"{base}/inbox/{row.id}", data=form, allow_redirects=False) as response:
                        assert response.status == 303, (response.status, await response.text())
                    answered.append((time.perf_counter() - started) * 1000)
                elapsed = time.perf_counter() - started_all
        finally:
            await gateway.stop()
    return {
        "benchmark": "console",
        "pending": pending,
        "inbox_page": {**percentiles(inbox), "bytes": len(page)},
        "inbox_fragment": percentiles(items),
        "live_check": percentiles(version),
        "answers": {**percentiles(answered), "count": len(answered), "per_s": round(len(answered) / elapsed, 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument("--answers", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.pending, args.answers))))


if __name__ == "__main__":
    main()
