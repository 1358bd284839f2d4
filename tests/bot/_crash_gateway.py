"""A gateway in a subprocess, for SIGKILL tests.

It runs the real gateway (store, supervisor, runs, interrupts) with:
- a deterministic function model: a user message asks for ``delete_cache``;
  after a tool result it answers ``done: <result>``;
- a counting tool that appends a line to ``COUNT_FILE`` each time it runs
  (and, when asked, sleeps first so the test can kill it mid-call); a message
  with ``note <text>`` asks for ``append_note`` instead (side effects, no
  confirmation), which counts ``noted <text>``;
- ``CRASH_ON=model``: SIGKILL at the first model call (a run cut off before
  anything ran); ``CRASH_ON=after-tool``: at the model call that follows a
  tool's result, once that result is committed;
- a JSON-lines channel: stdin lines are ``{"text": ...}`` or ``{"press": payload}``;
  every message the gateway sends is printed as one JSON line.  With
  ``CRASH_ON`` set to ``prompt`` or ``edit`` the channel SIGKILLs its own
  process instead of sending the first such message (the network seam is
  where a real crash would be noticed).  ``CRASH_ON=press-commit``: SIGKILL when
  the writer runs a resolution's update, inside the transaction that carries the
  press's inbox row (the press handed on, nothing of it committed);
- a stdin line may name its event's ``id`` (a platform's redelivery uses the same
  one); with ``ACKS=1`` each event the inbox accepted is printed as
  ``{"acked": id, "receipt": ...}`` (what the platform would be told).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration
from agents.tools.base import tool
from bot.config.settings import load_settings
from bot.events import Action, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.gateway.app import Gateway
from bot.inbox import Inbox
from bot.store.sql import sqlite_writer
from bot.store.sql.sqlite import writer_connection as _writer_connection

COUNT_FILE = Path(os.environ["COUNT_FILE"])
CRASH_ON = os.environ.get("CRASH_ON", "")
TOOL_HANGS = os.environ.get("TOOL_HANGS") == "1"
ACKS = os.environ.get("ACKS") == "1"
"""The tool starts, then never finishes (the test kills the process in it)."""
GATEWAY: Gateway | None = None


class FunctionModel(Model):
    name = "function"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        last = messages[-1]
        if CRASH_ON == "model" or (CRASH_ON == "after-tool" and last.role == "tool"):
            if GATEWAY is not None:
                await GATEWAY.store.flush()  # what ran is committed: the crash comes after it
            os.kill(os.getpid(), signal.SIGKILL)
        if system and "You are its node 'analyze'" in system:  # a graph (AGENTS_DIR): analyse, fix, review
            return ModelResponse(text='{"can_auto_fix": true, "needs_human": false}')
        if system and "You are its node 'review'" in system:
            return ModelResponse(text="reviewed: " + system.split("State so far (earlier nodes' results): ")[1][:200])
        if system and "You are its node 'fix'" in system and last.role == "tool":
            return ModelResponse(text='{"applied": true}')
        if last.role == "tool":
            return ModelResponse(text="done: " + "; ".join(str(r.content) for r in last.tool_results))
        text = next((m.text for m in reversed(messages) if m.role == "user" and m.text), "")
        if "note " in text:
            note = text.split("note ", 1)[1]
            return ModelResponse(
                tool_calls=(ToolCall(id=f"call-{os.getpid()}", name="append_note", args={"text": note}),)
            )
        return ModelResponse(tool_calls=(ToolCall(id="call-delete", name="delete_cache", args={"path": "/cache"}),))


@tool(risk="medium")
async def append_note(text: str) -> str:
    """Append a note (counts its runs in COUNT_FILE); needs no confirmation."""
    if TOOL_HANGS:
        _count("started")
        await asyncio.Event().wait()
    _count(f"noted {text}")
    return f"noted {text}"


@tool(risk="medium", confirm=True)
async def delete_cache(path: str) -> str:
    """Delete the build cache (counts its runs in COUNT_FILE)."""
    if TOOL_HANGS:
        _count("started")
        await asyncio.Event().wait()
    _count(f"deleted {path}")
    return f"deleted {path}"


def _count(line: str) -> None:
    with COUNT_FILE.open("a") as f:
        f.write(line + "\n")


class JsonChannel:
    name = "console"

    def __init__(self) -> None:
        self._refs = itertools.count(1)
        self.chat = ChatKey(channel="console", chat_id="crash")
        self._task: asyncio.Task[None] | None = None

    async def start(self, inbox: Inbox) -> None:
        self._task = asyncio.create_task(self._read(inbox))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _read(self, inbox: Inbox) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        n = 0
        while line := await reader.readline():
            n += 1
            data = json.loads(line)
            sender = Sender(id="u1", name="u1")
            event_id = str(data.get("id") or f"{os.getpid()}-{n}")
            event: InboundMessage | Action
            if "press" in data:
                event = Action(id=event_id, chat=self.chat, sender=sender, payload=data["press"])
            else:
                event = InboundMessage(id=event_id, chat=self.chat, sender=sender, text=data["text"], is_direct=True)
            receipt = await inbox.submit(event)
            if ACKS:
                print(json.dumps({"acked": event_id, "receipt": receipt.value}), flush=True)

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            return None
        if CRASH_ON == "prompt" and message.buttons:
            os.kill(os.getpid(), signal.SIGKILL)
        if CRASH_ON == "edit" and message.edit_of:
            os.kill(os.getpid(), signal.SIGKILL)
        if CRASH_ON == "job" and message.text.startswith("⏰"):  # the fire is committed; its send is cut off
            os.kill(os.getpid(), signal.SIGKILL)
        ref = f"msg-{os.getpid()}-{next(self._refs)}"
        out = {
            "ref": ref,
            "text": message.text,
            "edit_of": message.edit_of,
            "buttons": [[b.model_dump() for b in row] for row in message.buttons],
        }
        print(json.dumps(out), flush=True)
        return ref


def _kill_at_resolution(statement: str) -> None:
    """``CRASH_ON=press-commit``: the writer's trace callback; SIGKILL at a resolution's update (inside its
    transaction, before the commit)."""
    if statement.startswith("UPDATE interrupts SET status"):
        os.kill(os.getpid(), signal.SIGKILL)


def _writer_connection_killing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    conn = _writer_connection(*args, **kwargs)
    conn.set_trace_callback(_kill_at_resolution)
    return conn


async def main() -> None:
    if CRASH_ON == "press-commit":  # the store's writer opens its connection through this name
        sqlite_writer.writer_connection = _writer_connection_killing
    data_dir = os.environ["DATA_DIR"]
    settings = load_settings(
        None,
        env={},
        user_config=Path(data_dir) / "none.yaml",
        overrides={
            "store": {"data_dir": data_dir},
            "agents": {"dirs": [os.environ["AGENTS_DIR"]] if os.environ.get("AGENTS_DIR") else []},
            "log": {"level": "WARNING"},
            "routing": {"rule": {"learned": False, "meaning": False}},
            "jobs": {"min_interval_s": 0},
        },
    )
    global GATEWAY
    gateway = GATEWAY = Gateway(
        settings, model=FunctionModel(), channels=[JsonChannel()], tools=[delete_cache, append_note]
    )
    await gateway.start()
    print(json.dumps({"ready": True, "recovery": gateway.recovery.__dict__ if gateway.recovery else None}), flush=True)
    if os.environ.get("JOB_IN_S") and gateway.jobs is not None:  # a one-time job due shortly
        due = datetime.now(UTC) + timedelta(seconds=float(os.environ["JOB_IN_S"]))
        chat = ChatKey(channel="console", chat_id="crash")
        job = await gateway.jobs.create(
            chat, "console:u1", name="tick", action="message", text="tick", at=due.isoformat()
        )
        print(json.dumps({"job": job.id}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
