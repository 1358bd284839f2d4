"""The Discord adapter's test environment: the fake Discord server and real discord.py bots against it.

``fake`` and ``make_bot`` are fixtures: a test module imports them by name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from agents.tools.base import Tool
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from channels.discord import DiscordChannel
from tests.fakes.discord_server import (
    FakeDiscord,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
    assert server.unexpected == [], f"calls the fake does not know: {server.unexpected}"


class Bot:
    """A started gateway whose only channel is the Discord adapter."""

    def __init__(self, fake: FakeDiscord, settings: Settings) -> None:
        self.fake = fake
        self.settings = settings
        self.gateways: list[Gateway] = []

    @property
    def gateway(self) -> Gateway:
        return self.gateways[-1]

    async def start(self, model: ScriptedModel, tools: list[Tool] | None = None) -> Gateway:
        adapter = DiscordChannel(self.settings.channels.discord)
        gateway = Gateway(self.settings, model=model, channels=[adapter], tools=tools or [])
        self.gateways.append(gateway)
        await gateway.start()
        await self.fake.wait_identified(len(self.gateways))
        return gateway

    async def settle(self) -> None:
        await self.gateway.bus.join()

    async def replies(self, count: int, channel_id: str | None = None) -> list[str]:
        """Wait until ``count`` messages were posted (to ``channel_id``), and the chat is idle."""
        await self.fake.wait_for(lambda: len(self.fake.texts(channel_id)) >= count)
        await self.settle()
        return self.fake.texts(channel_id)


@pytest.fixture
async def make_bot(fake: FakeDiscord, make_settings: Callable[..., Settings]) -> AsyncIterator[Callable[..., Any]]:
    bots: list[Bot] = []

    def make(**discord: Any) -> Bot:
        section = {
            "enabled": True,
            "token": "dGVzdA.test.token",  # the shape of one: three dot-separated parts
            "api_base": fake.url,
            "allow_from": ["*"],
            "mention_policy": "mention",
            **discord,
        }
        settings = make_settings(
            channels={"console": {"enabled": False}, "discord": section}, routing={"strategy": "rule"}
        )
        bot = Bot(fake, settings)
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        for gateway in bot.gateways:
            if gateway._started:
                await gateway.stop(timeout=5)
