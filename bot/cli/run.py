"""``bot agents run NAME -p TEXT [--trace]``: one request from the terminal, through the real gateway.

The message goes in as the console's user (``channels.console.user_id``, in the console's chat) addressed
``@NAME``: the supervisor, the agent's tools, its handoffs, guardrails and graph run exactly as in a chat.  What
happened is printed from the request's trace as the design's step lines (``[debug-analyzer] read_file …``,
``🔄 Handoff: debug-analyzer → code-fixer``, ``✓ …``), or with ``--trace`` as its ``[Trace]`` blocks (model,
tokens, tool input and output, handoff payloads, guardrail violations and repairs).  A pause (a confirmation, a
question, a plan) is asked here; the end of input leaves it waiting for ``bot chat``.
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings
from bot.events import Action, Button, ChatKey, InboundMessage, OutboundMessage, Sender, event_key
from bot.tracing.steps import block, run_lines, step_of
from channels.terminal import terminal_safe

CHAT = ChatKey(channel="console", chat_id="local")
"""The console's chat: the agent sees its own earlier turns there, as in ``bot chat``."""
ECHOED = ("🔀 ", "🧭 ", "🤖 ")
"""Notices the step lines already say (a handoff, a graph's step, where it was routed)."""


class RunChannel:
    """The console seat of one ``agents run``: keeps what the gateway sends, for the command to print."""

    name = "console"
    forgets_messages = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, OutboundMessage]] = []
        self._refs = itertools.count(1)

    async def start(self, inbox: Any) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            return None
        ref = f"run-{next(self._refs)}"
        self.sent.append((ref, message))
        return ref


class Printer:
    """Prints the request's new trace events and messages after each step of the conversation."""

    def __init__(self, out: TextIO, trace: bool) -> None:
        self.out, self.trace = out, trace
        self.events = 0
        self.messages = 0

    def say(self, *lines: str) -> None:
        """Print ``lines``: answers, tool output and names the model chose, with control characters shown."""
        for line in lines:
            self.out.write(terminal_safe(line) + "\n")
        self.out.flush()

    async def catch_up(self, gateway: Any, key: str, channel: RunChannel) -> tuple[str, list[Button]] | None:
        """Print what happened since the last call; the prompt waiting for an answer (its ref and buttons)."""
        await gateway.tracing.flush()
        events = await gateway.tracing.events(key, str(CHAT))
        for event in events[self.events :]:
            step = step_of(event)
            self.say(*(block(step) if self.trace and event.type not in ("route", "run") else run_lines(step)))
        self.events = len(events)
        prompt: tuple[str, list[Button]] | None = None
        for ref, message in channel.sent[self.messages :]:
            if message.edit_of is not None or (message.kind == "notice" and message.text.startswith(ECHOED)):
                continue
            buttons = [b for row in message.buttons for b in row]
            if buttons:
                prompt = (ref, buttons)
                self.say(message.text, "  ".join(f"[{i}] {b.label}" for i, b in enumerate(buttons, 1)))
            elif message.kind == "notice":
                self.say(message.text)
            else:
                self.say(f"✓ {message.text}")
        self.messages = len(channel.sent)
        return prompt


def run_settings(config: Path | None) -> Settings:
    """The configuration with the console as the only channel (answers printed whole, every event traced)."""
    from bot.cli.settings import cli_settings

    off = {"enabled": False}
    return cli_settings(
        config,
        channels={"console": {"enabled": True, "streaming": False}, "telegram": off, "slack": off, "discord": off},
        http=off,
        tracing={"enabled": True, "sample_rate": 1.0, "events": []},
    )


def setup_run_logging(settings: Settings) -> None:
    """Log lines go to the data dir's bot.log; the terminal shows warnings and errors only."""
    from bot.cli.logs import setup_logging

    file = settings.store.data_dir.expanduser() / "bot.log"
    try:
        setup_logging(settings.log.level, settings.secrets(), file=file, terminal_level="WARNING")
    except OSError:
        setup_logging("WARNING", settings.secrets())


def _choice(line: str, buttons: list[Button]) -> Button | None:
    text = line.strip()
    if text.isdigit() and 1 <= int(text) <= len(buttons):
        return buttons[int(text) - 1]
    return next((b for b in buttons if b.label.casefold() == text.casefold()), None)


async def run_once(
    settings: Settings,
    name: str,
    text: str,
    *,
    trace: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    model: Any = None,
    tools: Any = None,
    clock: Clock = SYSTEM_CLOCK,
) -> int:
    """Run ``text`` through the agent ``name``; the exit code: 0 answered, 1 it failed or was refused, 2 no such
    agent, 3 a pause left waiting."""
    from bot.gateway.app import Gateway

    stdin, out = stdin or sys.stdin, stdout or sys.stdout
    channel = RunChannel()
    gateway = Gateway(settings, model=model, channels=[channel], tools=tools, clock=clock)
    await gateway.start()
    try:
        agents = gateway.routes.catalog.agents
        if name not in agents:
            close = difflib.get_close_matches(name, list(agents), n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            out.write(f"no agent named {name!r}.{hint} Known: {', '.join(agents)}\n")
            return 2
        console = settings.channels.section("console")
        sender = Sender(
            id=str(getattr(console, "user_id", "console-user")), name=str(getattr(console, "user_name", ""))
        )
        stamp = f"{time.time_ns():x}"
        event = InboundMessage(
            id=f"run-{stamp}", chat=CHAT, sender=sender, text=f"@{name} {text}", is_direct=True, mentions_bot=True
        )
        key = event_key(event)
        printer = Printer(out, trace)
        await gateway.inbox.submit(event)
        for n in itertools.count(1):
            await gateway.settled()
            prompt = await printer.catch_up(gateway, key, channel)
            if prompt is None or await gateway.runs.pending(str(CHAT)) is None:
                break
            ref, buttons = prompt
            line = await asyncio.to_thread(stdin.readline)
            chosen = _choice(line, buttons) if line else None
            if chosen is None:
                printer.say("No answer: the request waits; answer it in `bot chat` (or /cancel it there).")
                return 3
            await gateway.inbox.submit(
                Action(id=f"run-{stamp}-{n}", chat=CHAT, sender=sender, payload=chosen.payload, message_ref=ref)
            )
        return 0 if await _answered(gateway, key) else 1
    finally:
        await gateway.stop(timeout=5)


async def _answered(gateway: Any, key: str) -> bool:
    """The request ended with an answer that was sent (not failed, stopped, or rejected by a guardrail)."""
    events = await gateway.tracing.events(key, str(CHAT))
    ends = [e.data.get("status") for e in events if e.type == "run"]
    rejected = any(e.type == "guardrail" and e.data.get("status") == "rejected" for e in events)
    return bool(ends) and ends[-1] == "done" and not rejected
