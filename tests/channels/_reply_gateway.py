"""A real gateway with the real Telegram adapter, in a subprocess, for SIGKILL tests of delivery.

Environment: ``FAKE_URL`` (the fake Bot API's base), ``DATA_DIR`` (the SQLite database, kept across the
restart), ``COUNT_FILE`` (one line per run of the risky tool).

A user message ``@react delete cache <name>`` asks for ``delete_cache(path="/cache/<name>")``, a tool that
needs confirmation; after the tool result the model answers ``done: deleted /cache/<name>``.  Everyone is
allowed, routing is by rule, and the adapter does not pace its sends (a burst of replies leaves at once, the
hardest case for "sent once").  It forks a standby at start, as ``_intake_gateway.py`` does: the standby's
pid is the first line printed; it starts a second gateway on the same database when it reads a line on
stdin.  Each gateway prints ``{"ready": true, "recovery": {...}, "pid": ...}`` once started; SIGTERM stops
it gracefully.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration
from agents.tools.base import tool
from bot.config.settings import load_settings
from bot.gateway.app import Gateway
from tests.channels._intake_gateway import channel_section, unpaced

COUNT_FILE = Path(os.environ.get("COUNT_FILE") or os.devnull)


class ApprovalModel(Model):
    """Asks to delete the cache the user names; answers with the tool's result."""

    name = "approval"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        last = messages[-1]
        if last.role == "tool":
            return ModelResponse(text="done: " + "; ".join(str(r.content) for r in last.tool_results))
        name = (last.text or "").split()[-1]
        return ModelResponse(tool_calls=(ToolCall(id="call-1", name="delete_cache", args={"path": f"/cache/{name}"}),))


@tool(risk="medium", confirm=True)
async def delete_cache(path: str) -> str:
    """Delete a cache directory (each run is counted in COUNT_FILE)."""
    _count(f"deleted {path}")
    return f"deleted {path}"


def _count(line: str) -> None:
    with COUNT_FILE.open("a") as f:
        f.write(line + "\n")


async def main() -> None:
    data_dir = Path(os.environ["DATA_DIR"])
    overrides: dict[str, Any] = {
        "store": {"data_dir": str(data_dir)},
        "agents": {"dirs": []},
        "log": {"level": "WARNING"},
        "routing": {"strategy": "rule", "rule": {"learned": False}},
        "channels": {"console": {"enabled": False}, **channel_section("telegram-polling", os.environ["FAKE_URL"])},
        "limits": {"sender_rate_per_min": 0, "chat_queue_notice": 10_000, "chat_queue_max": 10_000},
        "http": {"enabled": False},
    }
    settings = load_settings(None, env={}, user_config=data_dir / "none.yaml", overrides=overrides)
    gateway = Gateway(settings, model=ApprovalModel(), tools=[delete_cache])
    unpaced(gateway)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await gateway.start()
    ready = {"ready": True, "recovery": asdict(gateway.recovery) if gateway.recovery else None, "pid": os.getpid()}
    print(json.dumps(ready), flush=True)
    await stop.wait()
    await gateway.stop(timeout=5)


if __name__ == "__main__":
    importlib.import_module("channels.telegram")  # paid once for both gateways (aiogram's types take seconds)
    standby = os.fork()
    if standby == 0 and not sys.stdin.readline():
        os._exit(0)
    if standby:
        print(json.dumps({"standby": standby}), flush=True)
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)
