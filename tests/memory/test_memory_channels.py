"""Linking across channels as a person would: remember something in the console, ask for a link code there, send it
from Telegram (the real aiogram client against the fake Bot API), and Telegram recalls it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings
from bot.events import ChatKey, InboundMessage, Sender
from bot.gateway.app import Gateway
from channels.telegram import TelegramChannel
from tests.conftest import RecordingChannel
from tests.fakes.telegram_server import TOKEN
from tests.helpers.telegram import ALICE, Env, started
from tests.waiting import CEILING_S


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


async def console_says(gateway: Gateway, console: RecordingChannel, text: str, n: int) -> list[str]:
    before = len(console.texts())
    event = InboundMessage(
        id=f"console-{n}",
        chat=ChatKey(channel="console", chat_id="c1"),
        sender=Sender(id="u1"),
        text=text,
        is_direct=True,
    )
    await gateway.inbox.submit(event)
    await asyncio.wait_for(gateway.settled(), CEILING_S)
    return console.texts()[before:]


async def test_remembered_in_the_console_is_recalled_in_telegram_after_linking(env: Env) -> None:
    def before_linking(request: ModelRequest) -> str:
        assert "Pixel" not in (request.system or ""), "another account: nothing shared yet"
        return "I don't know your cat."

    def after_linking(request: ModelRequest) -> str:
        assert "My cat is called Pixel" in (request.system or ""), request.system
        return "Your cat is called Pixel."

    model = ScriptedModel(
        [call("remember", {"fact": "My cat is called Pixel"}), "Noted.", before_linking, after_linking]
    )
    settings = env.make_settings(
        channels={
            "telegram": {
                "enabled": True,
                "token": TOKEN,
                "api_base": env.fake.base_url,
                "allow_from": [str(ALICE)],
                "poll_timeout_s": 5,
            },
            "console": {"enabled": True, "allow_from": ["*"]},
        },
        routing={"strategy": "rule"},
    )
    console = RecordingChannel("console")
    gateway = Gateway(settings, model=model, channels=[TelegramChannel(settings.channels.telegram), console])
    await gateway.start()
    env.running.append(gateway)

    assert await console_says(gateway, console, "remember that my cat is called Pixel", 1) == ["Noted."]
    env.fake.push(env.fake.message("what is my cat called?"))
    await env.reply("I don't know your cat.")

    [issued] = await console_says(gateway, console, "/memory link", 2)
    code = re.search(r"Your link code: (\w+)", issued)
    assert code is not None, issued
    env.fake.push(env.fake.message(f"/memory link {code.group(1)}"))
    linked = await env.reply("Linked with console account u1")
    assert "I now remember 1 things about you here too" in linked["text"]

    env.fake.push(env.fake.message("what is my cat called?"))
    await env.reply("Your cat is called Pixel.")
    env.fake.push(env.fake.message(f"/memory link {code.group(1)}"))
    await env.reply("unknown or expired"), "a code works once"
    env.fake.push(env.fake.message("/memory"))
    listing = await env.reply("What I remember about you")
    assert "My cat is called Pixel" in listing["text"] and "console:u1" in listing["text"]
    model.assert_complete()
