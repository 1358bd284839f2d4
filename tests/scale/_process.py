"""One process of a scaled-out bot (``ROLE``: gateway or worker), for the multi-process tests.

The real :class:`~bot.gateway.app.Gateway` in that role, on PostgreSQL (``PG_URL``) and Redis
(``REDIS_URL``), with the real Telegram adapter in webhook mode (gateway) against the fake platform
at ``FAKE_URL``.  The model answers ``echo: <text>``; a message with ``confirm`` in it asks for
the ``delete_cache`` tool, which needs confirmation and appends a line to ``COUNT_FILE`` when it runs;
after the tool it answers ``done: <result>``.  Prints ``{"ready": true, "pid": …}`` once started;
SIGTERM stops it gracefully (SIGKILL is the crash under test).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration
from agents.tools.base import tool
from bot.config.settings import load_settings
from bot.gateway.app import Gateway
from bot.gateway.runtime import tune_process
from tests.channels._intake_gateway import WEBHOOK_SECRET, unpaced
from tests.fakes.telegram_server import TOKEN as TELEGRAM_TOKEN

COUNT_FILE = Path(os.environ.get("COUNT_FILE", os.devnull))


class ScaleModel(Model):
    name = "scale"

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
        text = next((m.text for m in reversed(messages) if m.role == "user" and m.text), "")
        if "confirm" in text and any(t.name == "delete_cache" for t in tools):
            return ModelResponse(tool_calls=(ToolCall(id="call-1", name="delete_cache", args={"path": text}),))
        return ModelResponse(text="echo: " + text)


@tool(risk="medium", confirm=True)
async def delete_cache(path: str) -> str:
    """Delete the build cache (each run is a line in COUNT_FILE)."""
    await asyncio.to_thread(_count, f"{os.getpid()} {path}\n")
    return f"deleted {path}"


def _count(line: str) -> None:
    with COUNT_FILE.open("a") as f:
        f.write(line)


async def main() -> None:
    role = os.environ["ROLE"]
    level = os.environ.get("LOG_LEVEL", "WARNING")
    logging.basicConfig(level=level, format=f"%(asctime)s {role}-{os.getpid()} %(name)s %(levelname)s %(message)s")
    data_dir = Path(os.environ["DATA_DIR"])
    overrides: dict[str, Any] = {
        "store": {"url": os.environ["PG_URL"], "data_dir": str(data_dir)},
        "bus": {
            "url": os.environ["REDIS_URL"],
            "partitions": int(os.environ.get("PARTITIONS", "16")),
            "lease_ms": int(os.environ.get("LEASE_MS", "5000")),
            "max_concurrent_chats": int(os.environ.get("MAX_CONCURRENT_CHATS", "64")),
        },
        "agents": {"dirs": []},
        "log": {"level": os.environ.get("LOG_LEVEL", "WARNING")},
        "routing": {"strategy": "rule", "rule": {"learned": False}},  # arbitrary text: keywords, then chat
        "tracing": {"enabled": False},
        # What these processes show is delivery (once, in order, across a SIGKILL); memory has its own tests on
        # PostgreSQL (tests/store/test_memory_store.py) and through the gateway (tests/memory).
        "memory": {"enabled": False, "summary": {"enabled": False}},
        "channels": {
            "console": {"enabled": False},
            "telegram": {
                "enabled": True,
                "api_base": os.environ["FAKE_URL"],
                "allow_from": ["*"],
                "mention_policy": "all",
                "token": TELEGRAM_TOKEN,
                "mode": os.environ.get("TELEGRAM_MODE", "webhook"),
                "poll_timeout_s": 1,
                "webhook": {"secret_token": WEBHOOK_SECRET},
                "commands_menu": False,
            },
        },
        "limits": {"sender_rate_per_min": 0, "chat_queue_notice": 10_000, "chat_queue_max": 10_000},
        "http": {
            "enabled": role in ("gateway", "all"),
            "host": "127.0.0.1",
            "port": int(os.environ.get("HTTP_PORT", "0")),
        },
    }
    settings = load_settings(None, env={}, user_config=data_dir / "none.yaml", overrides=overrides)
    gateway = Gateway(settings, model=ScaleModel(), tools=[delete_cache], role=role)  # type: ignore[arg-type]
    unpaced(gateway)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await gateway.start()
    tune_process(settings.runtime)  # the collector and switch interval, as `bot run` does
    print(json.dumps({"ready": True, "pid": os.getpid(), "role": role}), flush=True)
    await stop.wait()
    await gateway.stop(timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)
