"""Answers shown while the model writes them, through the real aiogram adapter against the fake Bot API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from agents.messages import ToolCall
from agents.models.scripted import ScriptedModel, Streamed
from agents.tools.base import Tool, tool
from bot.config.settings import Settings
from tests.channels.test_telegram import ALICE, Env


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    env = Env(make_settings)
    await env.fake.start()
    try:
        yield env
    finally:
        for gateway in list(env.running):
            await env.stop(gateway)
        await env.fake.stop()


ANSWER = ("## Plan\n", "First **pack** the bags, ", "then book ", "the train.\n\n* tickets\n* snacks")


def texts_of(env: Env, method: str) -> list[str]:
    return [c.params["text"] for c in env.fake.of(method) if int(c.params["chat_id"]) == ALICE]


async def test_a_streamed_answer_grows_then_ends_as_exactly_the_whole_answer(env: Env) -> None:
    model = ScriptedModel([Streamed(ANSWER, delay_s=0.6)])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@chat help me with my trip"))
    await env.fake.wait_for(lambda: any("snacks" in t and "…" not in t for t in texts_of(env, "editMessageText")), 15)
    previews = texts_of(env, "sendMessage")
    assert len(previews) == 1 and "…" in previews[0], "one message, shown before the answer was complete"
    edits = texts_of(env, "editMessageText")
    assert len(edits) >= 2, "edited as it grew"
    final = edits[-1]
    assert final == "<b>Plan</b>\nFirst <b>pack</b> the bags, then book the train.\n\n• tickets\n• snacks"
    (chat, message_id), shown = next(iter((k, m) for k, m in env.fake.messages.items() if k[0] == ALICE))
    assert shown["text"].endswith("• snacks") and len(env.fake.messages) == 1, "the preview became the answer"
    history = await gateway.store.history(f"telegram:{ALICE}")
    assert [m.text for m in history if m.role == "assistant"] == ["".join(ANSWER)], "stored once, whole"


async def test_an_answer_complete_at_once_is_sent_as_before(env: Env) -> None:
    await env.start(ScriptedModel(["Paris."]))
    env.fake.push(env.fake.message("@chat capital of France?"))
    await env.reply("Paris.")
    assert texts_of(env, "editMessageText") == [] and len(texts_of(env, "sendMessage")) == 1


async def test_a_tool_call_after_some_text_ends_the_preview_and_the_answer_follows(env: Env) -> None:
    lookup = Streamed(
        ("Let me check the ", "weather first."), delay_s=0.4, tool_calls=(ToolCall(id="c1", name="get_time", args={}),)
    )
    model = ScriptedModel([lookup, Streamed(("It is ", "sunny."), delay_s=0.4)])
    await env.start(model, tools=[_time_tool()])
    env.fake.push(env.fake.message("@react what is the weather?"))
    await env.fake.wait_for(
        lambda: any(t == "It is sunny." for t in [*texts_of(env, "editMessageText"), *texts_of(env, "sendMessage")]), 15
    )
    shown = [m["text"] for (chat, _), m in sorted(env.fake.messages.items()) if chat == ALICE]
    assert shown == ["Let me check the weather first.", "It is sunny."], "the first preview ended as it was"


def _time_tool() -> Tool:
    @tool(risk="safe")
    async def get_time() -> str:
        """The time."""
        return "12:00"

    return get_time
