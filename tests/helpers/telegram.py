"""The Telegram adapter's test environment: a fake Bot API and gateways built on one settings object, and the
users and chats it knows."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents.models.scripted import ScriptedModel
from agents.tools.base import Tool, tool
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from channels.telegram import TelegramChannel
from tests.fakes.telegram_server import TOKEN, FakeTelegram

ALICE, BOB = 111, 222
GROUP, FORUM = -1001, -1002


class Env:
    """A fake Bot API plus gateways built on one settings object (so restarts share the database)."""

    def __init__(self, make_settings: Callable[..., Settings]) -> None:
        self.fake = FakeTelegram()
        self.make_settings = make_settings
        self.settings: Settings | None = None
        self.running: list[Gateway] = []
        self.runs: list[str] = []

    def section(self, **telegram: Any) -> dict[str, Any]:
        """The channel's section: the fake Bot API, Alice and Bob allowed."""
        return {
            "enabled": True,
            "token": TOKEN,
            "api_base": self.fake.base_url,
            "allow_from": [str(ALICE), str(BOB)],
            "mention_policy": "mention",
            "poll_timeout_s": 5,
            **telegram,
        }

    def configure(self, *, http: bool = False, **telegram: Any) -> Settings:
        extra = {"http": {"enabled": True, "port": 0}} if http else {}
        self.settings = self.make_settings(
            channels={"telegram": self.section(**telegram), "console": {"enabled": False}},
            routing={"strategy": "rule"},
            **extra,
        )
        return self.settings

    async def start(self, model: ScriptedModel, *, tools: list[Tool] | None = None) -> Gateway:
        settings = self.settings or self.configure()
        gateway = Gateway(
            settings, model=model, channels=[TelegramChannel(settings.channels.telegram)], tools=tools or []
        )
        await gateway.start()
        self.running.append(gateway)
        return gateway

    async def stop(self, gateway: Gateway) -> None:
        self.running.remove(gateway)
        await gateway.stop(timeout=5)

    def tools(self) -> list[Tool]:
        @tool(risk="medium", confirm=True)
        async def delete_cache(path: str) -> str:
            """Delete a build cache directory."""
            self.runs.append(path)
            return f"deleted {path}"

        return [delete_cache]

    def adapter(self, gateway: Gateway) -> TelegramChannel:
        channel = gateway.channels[0]
        assert isinstance(channel, TelegramChannel)
        return channel

    async def reply(self, text: str, chat_id: int = ALICE) -> dict[str, Any]:
        """Wait for a sendMessage to ``chat_id`` whose text contains ``text``; its parameters."""
        found = await self.fake.wait_for(
            lambda: next(
                (
                    c.params
                    for c in self.fake.of("sendMessage")
                    if int(c.params["chat_id"]) == chat_id and text in c.params["text"]
                ),
                None,
            )
        )
        return dict(found)

    async def prompt(self, chat_id: int = ALICE) -> tuple[str, dict[str, str]]:
        """The newest message with buttons in ``chat_id``: its reference and {label: callback data}."""

        def newest() -> tuple[str, dict[str, str]] | None:
            for (chat, message_id), message in reversed(self.fake.messages.items()):
                if chat == chat_id and message.get("reply_markup"):
                    rows = message["reply_markup"]["inline_keyboard"]
                    return f"{chat}:{message_id}", {b["text"]: b["callback_data"] for row in rows for b in row}
            return None

        return await self.fake.wait_for(newest)


@contextlib.asynccontextmanager
async def started(env: Env) -> AsyncIterator[Env]:
    """``env`` with its fake Bot API serving; every gateway it started is stopped at the end."""
    await env.fake.start()
    try:
        yield env
    finally:
        for gateway in list(env.running):
            await env.stop(gateway)
        await env.fake.stop()


def approve(buttons: dict[str, str]) -> str:
    return next(data for label, data in buttons.items() if "Approve" in label)
