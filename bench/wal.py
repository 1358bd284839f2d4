"""The SQLite WAL under steady load: does it stay bounded while the bot runs?

Drives the real gateway (as ``bench/gateway.py`` does: inbox → supervisor → Chat →
store, tracing on, ``synchronous=FULL``) with ``--messages`` messages over
``--chats`` chats, as fast as it answers, and samples the size of ``bot.db-wal``
along the way.  Prints ONE JSON line: the WAL size at each checkpoint of the run
(every ``--every`` messages), the largest seen, the database size, and the
checkpoint counters.

    python bench/wal.py [--messages 20000] [--chats 200]

Target: the WAL stays under 64 MB at 20,000 messages (it grew to 420 MB before
the writer reset it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway import InstantModel, ReplyChannel, _message, _roundtrip

from bot.config.settings import load_settings
from bot.gateway.app import Gateway
from bot.gateway.runtime import tune_process


def _mb(path: Path) -> float:
    try:
        return round(os.path.getsize(path) / 1e6, 2)
    except OSError:
        return 0.0


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bot-wal-") as tmp:
        data = Path(tmp) / "data"
        settings = load_settings(
            None,
            env={},
            user_config=Path(tmp) / "no-user.yaml",
            overrides={
                "store": {"data_dir": str(data)},
                "agents": {"dirs": []},
                "http": {"enabled": False},
                "log": {"level": "WARNING"},
                "routing": {"strategy": "rule"},
                "limits": {"sender_rate_per_min": 0},
            },
        )
        channel = ReplyChannel()
        gateway = Gateway(settings, model=InstantModel(), channels=[channel])
        await gateway.start()
        tune_process(settings.runtime)
        wal = data / "bot.db-wal"
        samples: dict[int, float] = {}
        largest = 0.0
        sent = 0
        started = time.perf_counter()
        try:
            next_sample = args.every

            async def one_chat(chat: int) -> None:
                nonlocal sent, largest, next_sample
                n = 0
                while sent < args.messages:
                    sent += 1
                    n += 1
                    await _roundtrip(gateway, channel, _message(chat, f"wal-{chat}-{n}"))
                    largest = max(largest, _mb(wal))
                    if sent >= next_sample:
                        samples[next_sample] = _mb(wal)
                        next_sample += args.every

            await asyncio.gather(*(one_chat(c) for c in range(args.chats)))
            elapsed = time.perf_counter() - started
            stats = gateway.store.stats()
        finally:
            await gateway.stop()
        return {
            "messages": sent,
            "wal_mb_by_messages": samples,
            "wal_mb_max": largest,
            "db_mb": _mb(data / "bot.db"),
            "msgs_per_s": round(sent / elapsed, 1),
            "checkpoints": stats.get("checkpoints"),
            "wal_resets": stats.get("wal_resets"),
            "commits": stats.get("commits"),
        }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--every", type=int, default=2_000, help="sample the WAL size every N messages")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
