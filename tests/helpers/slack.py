"""The Slack adapter's test environment: a fake Web API, signed requests and started HTTP-mode harnesses.

``fake`` and ``make_slack`` are fixtures: a test module imports them by name."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from agents.models.scripted import ScriptedModel
from agents.tools.base import Tool
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from channels.slack import SlackChannel
from tests.fakes.slack_server import FakeSlack

SECRET = "0123456789abcdef" * 2  # a signing secret's shape: 32 hex digits
BOT_TOKEN = "xoxb-test-token"


def sign(body: str, *, ts: int | None = None, secret: str = SECRET) -> dict[str, str]:
    """Slack's request signature: ``v0=`` + HMAC-SHA256(secret, ``v0:{ts}:{body}``)."""
    stamp = str(int(time.time()) if ts is None else ts)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


class SlackHarness:
    """A started gateway whose only channel is a real :class:`SlackChannel`, plus ways to talk to it."""

    def __init__(self, fake: FakeSlack, settings: Settings, http: aiohttp.ClientSession) -> None:
        self.fake, self.settings, self.http = fake, settings, http
        self.gateway: Gateway | None = None
        self.channel: SlackChannel | None = None
        self.model = ScriptedModel()
        self._n = itertools.count(1)

    async def start(self, model: ScriptedModel, tools: list[Tool] | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.model = model
        self.channel = SlackChannel(self.settings.channels.slack, clock=clock)
        self.gateway = Gateway(self.settings, model=model, channels=[self.channel], tools=tools or [])
        await self.gateway.start()

    async def stop(self) -> None:
        if self.gateway is not None:
            await self.gateway.stop(timeout=5)
            self.gateway = None

    @property
    def url(self) -> str:
        assert self.gateway is not None and self.gateway.http is not None
        return f"http://127.0.0.1:{self.gateway.http.port}{self.settings.channels.slack.events_path}"

    def ts(self) -> str:
        n = next(self._n)
        return f"1600000000.{n:06d}"

    async def post(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        headers = {"Content-Type": content_type, **(sign(body) if headers is None else headers)}
        async with self.http.post(self.url, data=body.encode(), headers=headers) as response:
            return response.status, await response.text()

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, retry: int = 0) -> int:
        body = json.dumps(
            {
                "token": "legacy",
                "team_id": "T1",
                "api_app_id": "A1",
                "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._n)}",
                "event_time": int(time.time()),
                "event": event,
            }
        )
        extra = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        status, _ = await self.post(body, "application/json", {**sign(body), **extra})
        return status

    async def mention(self, text: str, *, channel: str = "C1", user: str = "U1", **extra: Any) -> str:
        ts = extra.pop("ts", None) or self.ts()
        event = {"type": "app_mention", "user": user, "text": f"<@UBOT> {text}", "ts": ts, "channel": channel}
        assert await self.event({**event, **extra}) == 200
        return ts

    async def message(self, text: str, *, channel: str = "D1", user: str = "U1", **extra: Any) -> str:
        ts = extra.pop("ts", None) or self.ts()
        channel_type = "im" if channel.startswith("D") else "channel"
        event = {"type": "message", "channel_type": channel_type, "user": user, "text": text, "ts": ts}
        assert await self.event({**event, "channel": channel, **extra}) == 200
        return ts

    async def form(self, fields: dict[str, str]) -> tuple[int, str]:
        return await self.post(urlencode(fields), "application/x-www-form-urlencoded")

    async def press(self, prompt: dict[str, Any], label: str, *, user: str = "U1") -> int:
        """Press the button labelled ``label…`` on a posted prompt (``block_actions``, as Slack sends it)."""
        button = next(
            e for b in prompt["blocks"] if b["type"] == "actions" for e in b["elements"] if label in e["text"]["text"]
        )
        message = {"type": "message", "ts": prompt["ts"], "text": prompt["text"], "blocks": prompt["blocks"]}
        container = {"type": "message", "message_ts": prompt["ts"], "channel_id": prompt["channel"]}
        if prompt.get("thread_ts"):
            message["thread_ts"] = container["thread_ts"] = prompt["thread_ts"]
        payload = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T1"},
            "api_app_id": "A1",
            "token": "legacy",
            "container": {**container, "is_ephemeral": False},
            "trigger_id": f"trigger-{next(self._n)}",
            "team": {"id": "T1", "domain": "fake"},
            "channel": {"id": prompt["channel"], "name": "general"},
            "message": message,
            "response_url": self.fake.response_url(f"press-{user}"),
            "actions": [
                {
                    "type": "button",
                    "action_id": button["action_id"],
                    "block_id": "b1",
                    "text": button["text"],
                    "value": button["value"],
                    "action_ts": str(time.time()),
                }
            ],
        }
        status, _ = await self.form({"payload": json.dumps(payload)})
        return status

    async def settle(self) -> None:
        """Everything received so far was handed over and handled."""
        assert self.channel is not None and self.gateway is not None
        await self.channel.settled()
        await self.gateway.bus.join()

    def prompt(self) -> dict[str, Any]:
        """The newest post with buttons, with the ts the fake gave it."""
        for (channel, ts), message in reversed(self.fake.messages.items()):
            if any(b["type"] == "actions" for b in message.get("blocks") or ()):
                return {**message, "channel": channel, "ts": ts}
        raise AssertionError("no prompt with buttons was posted")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def make_slack(
    fake: FakeSlack, make_settings: Callable[..., Settings], scripted: Any
) -> AsyncIterator[Callable[..., Any]]:
    """``await make_slack(*steps, tools=..., clock=..., **slack_keys)`` → a started :class:`SlackHarness` (HTTP mode;
    ``clock``: the channel's)."""
    harnesses: list[SlackHarness] = []
    async with aiohttp.ClientSession() as http:

        async def make(
            *steps: Any, tools: list[Tool] | None = None, clock: Clock = SYSTEM_CLOCK, **slack: Any
        ) -> SlackHarness:
            section = {
                "enabled": True,
                "mode": "http",
                "bot_token": BOT_TOKEN,
                "signing_secret": SECRET,
                "api_base": fake.base_url,
                "allow_from": ["U1", "U2"],
                **slack,
            }
            settings = make_settings(channels={"slack": section}, routing={"strategy": "rule"}, http={"port": 0})
            harness = SlackHarness(fake, settings, http)
            await harness.start(scripted(*steps), tools, clock)
            harnesses.append(harness)
            return harness

        yield make
        for harness in harnesses:
            await harness.stop()


def texts(posts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in posts]
