"""A real gateway with the real Discord adapter, in a subprocess, for the SIGKILL test of sending once.

Environment: ``FAKE_URL`` (:attr:`FakeDiscord.url`), ``DATA_DIR`` (where the SQLite database lives, the same
across restarts).  Every guild message is answered (``mention_policy: all``, everyone allowed, no streaming): the
model answers ``LONG`` (three parts on Discord) to the text ``long``, else ``echo: <text>``.  Once started it
prints one JSON line, ``{"ready": true, "pid": ...}``; SIGTERM stops it gracefully (SIGKILL is the crash under
test).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ToolDeclaration
from bot.config.settings import load_settings
from bot.gateway.app import Gateway

PARTS = tuple(" ".join(f"part{n}-word{i}" for i in range(120)) for n in (1, 2, 3))
"""Three paragraphs of about 1,600 characters: a message of three parts on Discord (2,000 at most each)."""
LONG = "\n\n".join(PARTS)


class EchoModel(Model):
    name = "echo"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        text = next((m.text for m in reversed(messages) if m.role == "user" and m.text), "")
        return ModelResponse(text=LONG if text == "long" else "echo: " + text)


async def main() -> None:
    data_dir = Path(os.environ["DATA_DIR"])
    discord = {
        "enabled": True,
        "token": "dGVzdA.test.token",
        "api_base": os.environ["FAKE_URL"],
        "allow_from": ["*"],
        "mention_policy": "all",
        "streaming": False,
    }
    overrides: dict[str, Any] = {
        "store": {"data_dir": str(data_dir)},
        "agents": {"dirs": []},
        "log": {"level": "WARNING"},
        "routing": {"strategy": "rule", "rule": {"learned": False}},
        "channels": {"console": {"enabled": False}, "discord": discord},
        "http": {"enabled": False},
    }
    settings = load_settings(None, env={}, user_config=data_dir / "none.yaml", overrides=overrides)
    gateway = Gateway(settings, model=EchoModel(), tools=[])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await gateway.start()
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    await stop.wait()
    await gateway.stop(timeout=5)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # stopped and closed: skip the interpreter's teardown
