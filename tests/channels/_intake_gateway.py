"""A real gateway with a real Telegram or Slack adapter, in a subprocess, for SIGKILL tests of the intake.

Environment:
- ``INTAKE_MODE``: ``telegram-polling``, ``telegram-webhook``, ``slack-http`` or ``slack-socket``;
- ``FAKE_URL``: the fake platform's API base (``FakeTelegram.base_url`` / ``FakeSlack.base_url``);
- ``DATA_DIR``: where the SQLite database lives (the same across restarts);
- ``HTTP_PORT``: the shared HTTP server's port (webhook and Slack HTTP modes).

The model answers ``echo: <the last user text>`` at once, except texts ending in ``HOLD_SUFFIX``: those
wait until the file ``RELEASE_FILE`` exists (so some messages are surely acknowledged and not answered when the
test kills the gateway); routing is by rule; everyone is allowed and the fairness limits are out of the way.
Once started it prints one JSON line:
``{"ready": true, "recovery": {..., "inbox": <events recovered from the inbox>}, "pid": ...}``.
SIGTERM stops it gracefully (SIGKILL is the crash under test).  With ``STANDBY`` set, it first forks a
standby (its pid is the first line printed) that starts a second gateway on the same database when it
reads a line on stdin.
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

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ToolDeclaration
from bot.config.settings import load_settings
from bot.gateway.app import Gateway
from tests.fakes.telegram_server import TOKEN as TELEGRAM_TOKEN

WEBHOOK_SECRET = "intake-webhook-secret"
SLACK_SIGNING_SECRET = "fedcba9876543210" * 2  # the shape of one: 32 hex digits


HOLD_SUFFIX = os.environ.get("HOLD_SUFFIX") or None
RELEASE_FILE = Path(os.environ.get("RELEASE_FILE") or os.devnull)


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
        if HOLD_SUFFIX and text.endswith(HOLD_SUFFIX):
            while not RELEASE_FILE.exists():  # noqa: ASYNC110 - another process makes the file
                await asyncio.sleep(0.01)
        return ModelResponse(text="echo: " + text)


def channel_section(mode: str, api_base: str) -> dict[str, Any]:
    common = {"enabled": True, "api_base": api_base, "allow_from": ["*"], "mention_policy": "all"}
    if mode.startswith("telegram-"):
        return {
            "telegram": {
                **common,
                "token": TELEGRAM_TOKEN,
                "mode": mode.removeprefix("telegram-"),
                "webhook": {"secret_token": WEBHOOK_SECRET},
                "poll_timeout_s": 1,
                "commands_menu": False,
            }
        }
    return {
        "slack": {
            **common,
            "mode": mode.removeprefix("slack-"),
            "bot_token": "xoxb-intake",
            "app_token": "xapp-intake",
            "signing_secret": SLACK_SIGNING_SECRET,
            "typing_reaction": "",
        }
    }


def unpaced(gateway: Gateway) -> None:
    """No flood pacing: the fakes enforce no rate limits, and Telegram's 30 messages a second (Slack's one a
    second per channel) would stretch a burst of a few hundred answers over 10 seconds."""
    for channel in gateway.channels:
        if channel.name == "telegram":
            from channels.telegram import delivery as telegram

            free = (10_000, 10_000.0)
            channel.api.pacer = telegram.Pacer(private=free, group=free, overall=free)  # type: ignore[attr-defined]
        else:
            from channels.slack import delivery as slack

            channel.api.pacer = slack.Pacer(rate=10_000.0, burst=10_000.0)  # type: ignore[attr-defined]


async def main() -> None:
    mode, data_dir = os.environ["INTAKE_MODE"], Path(os.environ["DATA_DIR"])
    overrides: dict[str, Any] = {
        "store": {"data_dir": str(data_dir)},
        "agents": {"dirs": []},
        "log": {"level": "WARNING"},
        "routing": {"strategy": "rule", "rule": {"learned": False}},  # arbitrary text: keywords, then chat
        "channels": {"console": {"enabled": False}, **channel_section(mode, os.environ["FAKE_URL"])},
        # Generous limits: this script tests what is stored and acknowledged, not fairness.
        "limits": {"sender_rate_per_min": 0, "chat_queue_notice": 10_000, "chat_queue_max": 10_000},
        "http": {"enabled": False, "host": "127.0.0.1", "port": int(os.environ.get("HTTP_PORT", "0"))},
    }
    settings = load_settings(None, env={}, user_config=data_dir / "none.yaml", overrides=overrides)
    gateway = Gateway(settings, model=EchoModel(), tools=[])
    unpaced(gateway)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await gateway.start()
    ready = {"ready": True, "recovery": asdict(gateway.recovery) if gateway.recovery else None, "pid": os.getpid()}
    print(json.dumps(ready), flush=True)
    await stop.wait()
    await gateway.stop(timeout=5)


if __name__ == "__main__":
    # Seconds of imports (aiogram's types alone take 3 s) are paid once for both gateways: a forked standby
    # waits for "start" on stdin (the restart after the crash; end of input: not needed) while this one runs.
    importlib.import_module("channels." + os.environ["INTAKE_MODE"].split("-")[0])
    if os.environ.get("STANDBY"):
        standby = os.fork()
        if standby == 0 and not sys.stdin.readline():
            os._exit(0)
        if standby:
            print(json.dumps({"standby": standby}), flush=True)
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # stopped and closed: skip the interpreter's teardown (a second or more here)
