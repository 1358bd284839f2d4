"""End-to-end gateway benchmark: inbox → bus → supervisor → Chat → store → channel.

Drives the real :class:`bot.gateway.app.Gateway` (the SQLite store on a temporary
FILE, every message and reply committed before the reply is sent) with a
zero-latency model and a recording channel, then prints ONE JSON line:

- ``throughput_msgs_per_s``: closed loop, each of ``--chats`` chats sends its
  next message as soon as its reply arrived;
- ``p50_ms`` / ``p99_ms``: open loop, ``--rate`` messages/s spread over the chats,
  latency from the scheduled send time to the reply (no coordinated omission);
- ``ack_p50_ms`` / ``ack_p99_ms``: in the open loop, time from receipt (the
  adapter hands the event to the inbox) to the acknowledgement (the inbox
  returned: the event is committed), what a platform waits for;
- ``peak_rss_mb``, ``synchronous`` and the parameters.

``--history N`` gives every chat N earlier messages before the run (a long-running bot's chats: the summary
folds in, the window is cut), measured apart from fresh chats, whose history grows during the run.

``--agents N`` writes N file agents (the four example agents and generated ones, bench/agent_files.py: a
description, triggers and examples each) to a temporary agents directory, waits until routing by meaning is ready
(the sentence encoder loaded, the agents placed) and sends the agents' examples as the messages, so the router
chooses among them (``routed``: how many messages each agent got, from the "Auto-routing to" notices, which the
gateway sends as messages of their own); ``--no-meaning`` measures the same without routing by meaning.
Every run waits until the sentence encoder is loaded and the agents are placed before it measures (a gateway
loads it on a thread at start: its second of CPU and the first placement would otherwise land in the first
seconds of the closed loop or not, as the host's speed has it); ``routing_by_meaning`` says whether it is on.
``--busy-loops N`` runs N CPU hogs beside the run (a busy host); ``cpu_ms_per_msg`` is this process's CPU time
over the closed loop's messages, which excludes theirs.

``--usage`` makes every answer report tokens (counted per person and chat, unawaited); ``--budget N`` sets
a daily token limit per person (a read before and an awaited write after each model call).

    python bench/gateway.py [--chats 200] [--seconds 10] [--synchronous FULL]
    python bench/gateway.py --agents 40 --history 160 [--busy-loops 2]

Targets: >= 1,000 msg/s and p99 < 25 ms (goal: 2,000 msg/s and p99 < 15 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ToolDeclaration, Usage
from bench.agent_files import write_agents
from bench.busy import busy_loops
from bot.config.settings import load_settings
from bot.events import ChatKey, InboundMessage, OutboundMessage, Sender
from bot.gateway.app import Gateway
from bot.gateway.runtime import tune_process
from bot.inbox import Inbox


class InstantModel(Model):
    """Answers every request at once with the same text."""

    name = "instant"
    usage = Usage()
    """What each answer reports using (``--usage``: 120 tokens, as a short real answer would)."""

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        return ModelResponse(text="ok", model=self.name, usage=self.usage)


class ReplyChannel:
    """A console-named channel that wakes whoever waits for the reply to a message id."""

    name = "console"

    def __init__(self, *, by_chat: bool = False) -> None:
        """``by_chat``: a notice that replies to no message (a budget's refusal) answers its chat's oldest message
        still waiting (``--budget``; off otherwise: the bench's own bookkeeping counts in the loop's CPU)."""
        self._waiting: dict[str, asyncio.Future[float]] = {}
        self._chats: dict[str, deque[str]] | None = {} if by_chat else None
        self._refs = itertools.count(1)
        self.errors = 0
        self.refusals = 0
        self.routed: dict[str, int] | None = None
        """``--agents``: messages per agent, from the routing notices (else such a notice counts as an error)."""

    async def start(self, inbox: Inbox) -> None:
        return None

    async def stop(self) -> None:
        return None

    def expect(self, message_id: str, chat: str = "") -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[message_id] = future
        if self._chats is not None:
            self._chats.setdefault(chat, deque()).append(message_id)
        return future

    async def watchdog(self, stall_s: float = 30.0) -> None:
        """Fail every waiting round trip when no reply came for ``stall_s`` (a stalled gateway ends the run)."""
        seen = -1
        while True:
            await asyncio.sleep(stall_s)
            now = next(self._refs)
            if now == seen + 1 and self._waiting:
                for future in self._waiting.values():
                    if not future.done():
                        future.set_exception(TimeoutError(f"no reply for {stall_s:g} s"))
                self._waiting.clear()
            seen = now

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            return None
        waiting = self._chats.get(str(message.chat)) if self._chats is not None else None
        reply_to = message.reply_to
        if message.kind == "notice" and reply_to is None and waiting:
            self.refusals += 1  # a budget's refusal ends the chat's oldest request
            reply_to = waiting[0]
        elif message.kind == "notice" and self.routed is not None and message.text.startswith(ROUTED):
            agent = message.text[len(ROUTED) :].split(" ", 1)[0]
            self.routed[agent] = self.routed.get(agent, 0) + 1
            return f"ref-{next(self._refs)}"
        elif message.kind == "notice":
            self.errors += 1  # the gateway reports a failure (e.g. the store did not commit)
        if waiting is not None and reply_to in waiting:
            waiting.remove(reply_to)
        future = self._waiting.pop(reply_to or "", None)
        if future is not None and not future.done():
            future.set_result(time.perf_counter())
        return f"ref-{next(self._refs)}"


ROUTED = "🤖 Auto-routing to: "
TEXTS: list[str] = []
"""``--agents``: the messages to send in turn (the agents' examples); empty: a plain numbered message."""
_turn = itertools.count()

CPU: dict[str, float] = {}
"""CPU seconds of the closed loop: the whole process, and the event loop's thread alone."""


def _message(chat: int, seq: str) -> InboundMessage:
    return InboundMessage(
        id=seq,
        chat=ChatKey(channel="console", chat_id=f"chat{chat}"),
        sender=Sender(id=f"user{chat}", name=f"user{chat}"),
        text=TEXTS[next(_turn) % len(TEXTS)] if TEXTS else f"message {seq} from chat {chat}",
        is_direct=True,
    )


async def _roundtrip(
    gateway: Gateway, channel: ReplyChannel, message: InboundMessage, acks: list[float] | None = None
) -> float:
    replied = channel.expect(message.id, str(message.chat))
    received = time.perf_counter()
    await gateway.inbox.submit(message)  # returns once committed: the platform's acknowledgement
    if acks is not None:
        acks.append((time.perf_counter() - received) * 1000)
    return await replied  # no timer per message (the driver's own cost): the watchdog ends a stalled run


async def closed_loop(gateway: Gateway, channel: ReplyChannel, chats: int, seconds: float) -> tuple[int, float]:
    deadline = time.perf_counter() + seconds

    async def one_chat(chat: int) -> int:
        sent = 0
        while time.perf_counter() < deadline:
            await _roundtrip(gateway, channel, _message(chat, f"closed-{chat}-{sent}"))
            sent += 1
        return sent

    started = time.perf_counter()
    cpu, loop_cpu = time.process_time(), time.thread_time()
    total = sum(await asyncio.gather(*(one_chat(c) for c in range(chats))))
    elapsed = time.perf_counter() - started
    CPU["process_s"], CPU["loop_s"] = time.process_time() - cpu, time.thread_time() - loop_cpu
    return total, elapsed


async def open_loop(
    gateway: Gateway, channel: ReplyChannel, chats: int, rate: float, seconds: float, acks: list[float]
) -> list[float]:
    count = int(rate * seconds)
    latencies: list[float] = []
    tasks: list[asyncio.Task[None]] = []

    async def one(k: int, due: float) -> None:
        replied = await _roundtrip(gateway, channel, _message(k % chats, f"open-{k}"), acks)
        latencies.append((replied - due) * 1000)

    start = time.perf_counter() + 0.05
    for k in range(count):
        due = start + k / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(k, due)))
    await asyncio.gather(*tasks)
    return sorted(latencies)


async def _prefill(gateway: Gateway, chats: int, turns: int) -> None:
    """``turns`` earlier messages in each chat (user and assistant in turn), stored before the gateway reads any."""
    for chat in range(chats if turns > 0 else 0):
        history = [
            Message.user(f"earlier question {i} from chat {chat}")
            if i % 2 == 0
            else Message.assistant(f"earlier answer {i} to chat {chat}", agent="chat")
            for i in range(turns)
        ]
        await gateway.store.append(str(ChatKey(channel="console", chat_id=f"chat{chat}")), history)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bot-bench-") as tmp:
        empty = Path(tmp) / "bench.yaml"
        empty.write_text("{}\n")
        settings = load_settings(
            empty,
            env={},
            user_config=Path(tmp) / "no-user.yaml",
            overrides={
                "store": {
                    "data_dir": str(Path(tmp) / "data"),
                    "synchronous": args.synchronous,
                    "cache_chats": args.cache_chats,
                },
                "agents": {"dirs": [str(Path(tmp) / "agents")] if args.agents else []},
                "http": {"enabled": False},
                "log": {"level": "WARNING"},
                "tracing": {"enabled": not args.no_tracing},
                "routing": {"strategy": args.strategy, "rule": {"meaning": not args.no_meaning}},
                "budgets": {"user": {"daily_tokens": args.budget}},
            },
        )
        channel = ReplyChannel(by_chat=bool(args.budget))
        if args.agents:
            TEXTS[:] = write_agents(Path(tmp) / "agents", args.agents)
            channel.routed = {}
        model = InstantModel()
        if args.usage or args.budget:
            model.usage = Usage(input_tokens=100, output_tokens=20)
        gateway = Gateway(settings, model=model, channels=[channel])
        await gateway.start()
        meaning = await asyncio.to_thread(gateway.router.prepare, 300)
        await _prefill(gateway, args.chats, args.history)
        tune_process(settings.runtime)  # as `bot run` does
        watchdog = asyncio.create_task(channel.watchdog())
        try:
            # Warm up: every chat's history is loaded once (the only reads of the run).
            await asyncio.gather(*(_roundtrip(gateway, channel, _message(c, f"warm-{c}")) for c in range(args.chats)))
            total, elapsed = await closed_loop(gateway, channel, args.chats, args.seconds)
            acks: list[float] = []
            latencies = await open_loop(gateway, channel, args.chats, args.rate, args.open_seconds, acks)
            acks.sort()
            stats = gateway.store.stats() if hasattr(gateway.store, "stats") else {}
        finally:
            watchdog.cancel()
            await gateway.stop()
    return {
        "throughput_msgs_per_s": round(total / elapsed, 1),
        "cpu_ms_per_msg": round(CPU["process_s"] * 1000 / max(total, 1), 3),
        "loop_cpu_ms_per_msg": round(CPU["loop_s"] * 1000 / max(total, 1), 3),
        "loop_busy": round(CPU["loop_s"] / elapsed, 2),
        "tracing": not args.no_tracing,
        "routing": args.strategy,
        "agents": args.agents,
        "routing_by_meaning": meaning,
        "routed": dict(sorted((channel.routed or {}).items(), key=lambda item: -item[1])),
        "busy_loops": args.busy_loops,
        "usage_counted": bool(args.usage or args.budget),
        "budget_tokens": args.budget,
        "p50_ms": round(_quantile(latencies, 0.50), 2),
        "p99_ms": round(_quantile(latencies, 0.99), 2),
        "ack_p50_ms": round(_quantile(acks, 0.50), 2),
        "ack_p99_ms": round(_quantile(acks, 0.99), 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "synchronous": settings.store.synchronous,
        "gc_threshold": settings.runtime.gc_threshold,
        "switch_interval_ms": settings.runtime.switch_interval_ms,
        "chats": args.chats,
        "history": args.history,
        "closed_loop_s": args.seconds,
        "closed_loop_msgs": total,
        "open_loop_rate": args.rate,
        "open_loop_msgs": len(latencies),
        "max_concurrent_chats": settings.bus.max_concurrent_chats,
        "errors": channel.errors,
        "budget_refusals": channel.refusals,
        "store": {k: stats[k] for k in ("writes", "commits", "largest_batch", "reads") if k in stats},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0, help="closed-loop duration")
    parser.add_argument("--rate", type=float, default=200.0, help="open-loop messages per second")
    parser.add_argument("--open-seconds", type=float, default=5.0, help="open-loop duration")
    parser.add_argument("--strategy", default="hybrid", choices=["rule", "llm", "hybrid"], help="routing strategy")
    parser.add_argument("--no-tracing", action="store_true", help="Measure without trace events.")
    parser.add_argument("--synchronous", default="FULL", choices=["OFF", "NORMAL", "FULL", "EXTRA"])
    parser.add_argument(
        "--cache-chats", type=int, default=1000, help="store.cache_chats (1: measure without the per-chat cache)"
    )
    parser.add_argument("--agents", type=int, default=0, help="file agents (routing by meaning among them)")
    parser.add_argument("--no-meaning", action="store_true", help="routing.rule.meaning false (triggers only)")
    parser.add_argument("--busy-loops", type=int, default=0, help="CPU hogs beside the run (a busy host)")
    parser.add_argument("--history", type=int, default=0, help="earlier messages in each chat before the run")
    parser.add_argument("--usage", action="store_true", help="Answers report tokens: usage is counted per call.")
    parser.add_argument("--budget", type=int, default=0, help="budgets.user.daily_tokens: checked before each call")
    args = parser.parse_args(argv)
    with busy_loops(args.busy_loops):
        print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
