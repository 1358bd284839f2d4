"""``/memory export`` in Telegram (real aiogram against the fake Bot API): the person gets a JSON file of what is
remembered about them in their direct chat, no copy stays on the server, and a group is told to ask privately."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings
from tests.helpers.telegram import ALICE, GROUP, Env, started


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


def documents(env: Env, chat_id: int) -> list[Any]:
    return [c.params["document"] for c in env.fake.of("sendDocument") if int(c.params["chat_id"]) == chat_id]


async def test_export_sends_the_person_a_json_file_of_their_memories(env: Env) -> None:
    settings = env.configure()
    model = ScriptedModel([call("remember", {"fact": "My favourite tea is genmaicha"}, id="r1"), "Noted."])
    await env.start(model)
    env.fake.push(env.fake.message("remember that my favourite tea is genmaicha"))
    await env.reply("Noted.")

    env.fake.push(env.fake.message("/memory export"))
    await env.reply("Sent: memory.json")
    [upload] = documents(env, ALICE)
    assert upload.filename == "memory.json"
    data = json.loads(upload.data)
    assert data["account"] == f"telegram:{ALICE}" and data["linked_accounts"] == []
    assert [(m["id"], m["text"], m["remembered_in"]) for m in data["memories"]] == [
        (1, "My favourite tea is genmaicha", f"telegram:{ALICE}")
    ]
    media = settings.store.data_dir.expanduser() / "media"
    assert not list(media.glob("memory-export-*")), "no copy stays on the server"

    env.fake.push(env.fake.message("/memory export", chat_id=GROUP))
    private = await env.reply("send /memory export to me in a direct chat", chat_id=GROUP)
    assert "private" in private["text"] and not documents(env, GROUP)
