"""Pairing on Telegram, end to end: real aiogram → the fake Bot API on 127.0.0.1, a real gateway. A stranger's DM
gets a code; the admin's ``/pair CODE`` lets them in without a restart; the new commands are in the menu."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from bot.config.settings import Settings
from channels.telegram import menu
from tests.helpers.telegram import ALICE, BOB, Env, started

CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4})\b")


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def test_a_stranger_is_paired_by_the_admin_in_the_chat(env: Env) -> None:
    env.configure(allow_from=[str(ALICE)], admins=[str(ALICE)])  # Bob is a stranger; pairing is the default
    gateway = await env.start(ScriptedModel([echo]))
    env.fake.push(env.fake.message("hi, can I use you?", chat_id=BOB, user_id=BOB, name="Bob"))
    offer = await env.reply("give an admin of this bot this code", chat_id=BOB)
    found = CODE.search(offer["text"])
    assert found and f"Your user id is {BOB}" in offer["text"]
    code = found.group(1)
    env.fake.push(env.fake.message(f"/pair {code}"))  # Alice, an admin, in her own chat
    await env.reply(f"Paired telegram user {BOB} (Bob)", chat_id=ALICE)
    await env.reply("An admin let you in", chat_id=BOB)
    env.fake.push(env.fake.message("hello again", chat_id=BOB, user_id=BOB, name="Bob"))
    await env.reply("echo: hello again", chat_id=BOB)
    assert (await gateway.runs.audit_log(1))[0]["new"] == f"telegram:{BOB}"
    assert {"new", "status", "model", "stop"} <= {c["command"] for c in env.fake.commands}
    assert [c["command"] for c in env.fake.commands] == [c for c, _ in menu.COMMANDS]
