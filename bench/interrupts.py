"""Interrupt cycles: N chats each raise a ToolConfirm and are resumed by a button press.

The real gateway (bus, supervisor, runs, interrupts, SQLite file store with
synchronous=FULL) with a zero-latency scripted model and a recording channel;
the checkpoint is durable before its prompt is sent.  Prints one JSON line:
cycles/s, p50/p99 ms per cycle, commits and bytes written per cycle.
Reference: LangGraph 1.2 (interrupt + Command(resume), SQLite checkpointer)
did 92-115 cycles/s here with 9 commits and ~121 KiB written per cycle.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration
from agents.tools.base import tool
from bot.config.settings import load_settings
from bot.events import Action, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.gateway.app import Gateway
from bot.gateway.runtime import tune_process
from bot.inbox import Inbox


class InstantModel(Model):
    """Calls the risky tool for a user message; answers after the tool result."""

    name = "instant"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        if messages[-1].role == "tool":
            return ModelResponse(text="done")
        return ModelResponse(tool_calls=(ToolCall(id="c1", name="purge", args={"target": "cache"}),))


@tool(risk="medium", confirm=True)  # built-in agents see up to medium risk; confirm=True asks anyway
async def purge(target: str) -> str:
    """Purge something (a no-op)."""
    return f"purged {target}"


class Channel:
    name = "console"

    def __init__(self) -> None:
        self.refs = itertools.count(1)
        self.waiters: dict[str, asyncio.Future[OutboundMessage]] = {}

    async def start(self, inbox: Inbox) -> None:
        return None

    async def stop(self) -> None:
        return None

    def expect(self, chat: str) -> asyncio.Future[OutboundMessage]:
        future: asyncio.Future[OutboundMessage] = asyncio.get_running_loop().create_future()
        self.waiters[chat] = future
        return future

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing" or message.edit_of:
            return None
        waiter = self.waiters.pop(message.chat.chat_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        return f"m{next(self.refs)}"


def written_bytes() -> int:
    """Bytes this process passed to write() (database, WAL and journal writes; the bench prints nothing meanwhile)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


async def cycle(gateway: Gateway, channel: Channel, chat: str, n: int) -> float:
    key = ChatKey(channel="console", chat_id=chat)
    sender = Sender(id=f"user-{chat}")
    started = time.perf_counter()
    prompt_future = channel.expect(chat)
    await gateway.inbox.submit(
        InboundMessage(id=f"{chat}-m{n}", chat=key, sender=sender, text="@react purge the cache", is_direct=True)
    )
    prompt = await prompt_future
    payload = prompt.buttons[0][0].payload
    answer = channel.expect(chat)
    await gateway.inbox.submit(Action(id=f"{chat}-a{n}", chat=key, sender=sender, payload=payload))
    final = await answer
    assert final.text == "done", final.text
    return (time.perf_counter() - started) * 1000


async def run(chats: int, cycles: int, synchronous: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-interrupts-") as tmp:
        data = Path(tmp) / "data"
        settings = load_settings(
            None,
            env={},
            user_config=Path(tmp) / "none.yaml",
            overrides={
                "store": {"data_dir": str(data), "synchronous": synchronous, "retention_interval_s": 3600},
                "agents": {"dirs": []},
                "log": {"level": "WARNING"},
            },
        )
        channel = Channel()
        gateway = Gateway(settings, model=InstantModel(), channels=[channel], tools=[purge])
        await gateway.start()
        tune_process(settings.runtime)  # as `bot run` does
        try:
            await asyncio.gather(*(cycle(gateway, channel, f"w{i}", 0) for i in range(min(chats, 20))))
            await gateway.store.flush()
            before_stats = gateway.store.stats()
            before_bytes = written_bytes()
            latencies: list[float] = []
            started = time.perf_counter()
            cpu, loop_cpu = time.process_time(), time.thread_time()

            async def chat_loop(i: int) -> None:
                for n in range(cycles):
                    latencies.append(await cycle(gateway, channel, f"c{i}", n))

            await asyncio.gather(*(chat_loop(i) for i in range(chats)))
            elapsed = time.perf_counter() - started
            cpu, loop_cpu = time.process_time() - cpu, time.thread_time() - loop_cpu
            await gateway.store.flush()
            after = gateway.store.stats()
            total = chats * cycles
            written = written_bytes() - before_bytes
        finally:
            await gateway.stop()
    latencies.sort()
    return {
        "benchmark": "interrupts",
        "chats": chats,
        "cycles": total,
        "cycles_per_s": round(total / elapsed, 1),
        "cpu_ms_per_cycle": round(cpu * 1000 / total, 3),
        "loop_cpu_ms_per_cycle": round(loop_cpu * 1000 / total, 3),
        "loop_busy": round(loop_cpu / elapsed, 2),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)], 2),
        "commits_per_cycle": round((after["commits"] - before_stats["commits"]) / total, 2),
        "writes_per_cycle": round((after["writes"] - before_stats["writes"]) / total, 2),
        "bytes_written_per_cycle": round(max(0, written) / total),
        "synchronous": synchronous,
        "gc_threshold": settings.runtime.gc_threshold,
        "switch_interval_ms": settings.runtime.switch_interval_ms,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "note": "bytes = bytes the process wrote (wchar), database and WAL included",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--synchronous", default="FULL")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    print(json.dumps(asyncio.run(run(args.chats, args.cycles, args.synchronous))))


if __name__ == "__main__":
    main()
