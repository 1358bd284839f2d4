"""Answers shown while the model writes them, through the real aiogram adapter against the fake Bot API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agents.messages import ToolCall
from agents.models.scripted import ScriptedModel, Streamed
from agents.tools.base import Tool, tool
from bot.config.settings import Settings
from tests.helpers.telegram import ALICE, GROUP, Env, started
from tests.waiting import CEILING_S


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


ANSWER = ("## Plan\n", "First **pack** the bags, ", "then book ", "the train.\n\n* tickets\n* snacks")


def texts_of(env: Env, method: str, chat_id: int = ALICE) -> list[str]:
    return [c.params["text"] for c in env.fake.of(method) if int(c.params["chat_id"]) == chat_id]


WHOLE = "Plan\nFirst pack the bags, then book the train.\n\n• tickets\n• snacks"
WHOLE_MARKS = [("bold", "Plan"), ("underline", "Plan"), ("bold", "pack")]


def shown_in(env: Env, *methods: str, chat_id: int = ALICE) -> Callable[[int], Awaitable[None]]:
    """A :class:`Streamed` gate: the next piece comes once ``k`` previews reached the chat (the text so far is on
    the screen), so a test never races the preview's timer."""

    async def shown(k: int) -> None:
        await env.fake.wait_for(lambda: sum(len(texts_of(env, m, chat_id)) for m in methods) >= k)

    return shown


async def test_a_private_chat_sees_a_native_draft_then_exactly_the_whole_answer(env: Env) -> None:
    gateway = await env.start(ScriptedModel([Streamed(ANSWER, gate=shown_in(env, "sendMessageDraft"))]))
    env.fake.push(env.fake.message("@chat help me with my trip"))
    await env.reply("snacks")
    drafts = env.fake.of("sendMessageDraft")
    assert len(drafts) >= 2 and len({c.params["draft_id"] for c in drafts}) == 1, "one draft, growing"
    assert all("…" in d.params["text"] for d in drafts) and "snacks" not in drafts[0].params["text"]
    assert texts_of(env, "sendMessage") == [WHOLE], "then one message: the whole answer, rendered"
    assert env.fake.marks(env.fake.of("sendMessage")[0].params) == WHOLE_MARKS, "as text + entities"
    assert texts_of(env, "editMessageText") == []
    history = await gateway.store.history(f"telegram:{ALICE}")
    assert [m.text for m in history if m.role == "assistant"] == ["".join(ANSWER)], "stored once, whole"


async def test_a_group_sees_one_message_edited_as_it_grows(env: Env) -> None:
    env.configure(mention_policy="all")
    await env.start(
        ScriptedModel([Streamed(ANSWER, gate=shown_in(env, "sendMessage", "editMessageText", chat_id=GROUP))])
    )
    env.fake.push(env.fake.message("@chat help me with my trip", chat_id=GROUP))
    await env.fake.wait_for(lambda: WHOLE in texts_of(env, "editMessageText", GROUP), CEILING_S)
    previews = texts_of(env, "sendMessage", GROUP)
    assert len(previews) == 1 and "…" in previews[0], "one message, shown before the answer was complete"
    edits = texts_of(env, "editMessageText", GROUP)
    assert len(edits) >= 2 and edits[-1] == WHOLE and edits.count(WHOLE) == 1, "edited as it grew, ends whole"
    shown = [m["text"] for (chat, _), m in env.fake.messages.items() if chat == GROUP]
    assert shown == [WHOLE], "the preview became the answer"
    assert env.fake.of("sendMessageDraft") == []


async def test_an_answer_complete_at_once_is_sent_as_before(env: Env) -> None:
    await env.start(ScriptedModel(["Paris."]))
    env.fake.push(env.fake.message("@chat capital of France?"))
    await env.reply("Paris.")
    assert texts_of(env, "editMessageText") == [] and len(texts_of(env, "sendMessage")) == 1


async def test_a_tool_call_after_some_text_ends_the_preview_and_the_answer_follows(env: Env) -> None:
    lookup = Streamed(
        ("Let me check the ", "weather first."),
        tool_calls=(ToolCall(id="c1", name="get_time", args={}),),
        gate=shown_in(env, "sendMessageDraft"),  # a preview is up before the tool call ends it
    )
    model = ScriptedModel([lookup, Streamed(("It is ", "sunny."), delay_s=0.4)])
    await env.start(model, tools=[_time_tool()])
    env.fake.push(env.fake.message("@react what is the weather?"))
    await env.fake.wait_for(
        lambda: any(t == "It is sunny." for t in [*texts_of(env, "editMessageText"), *texts_of(env, "sendMessage")]), 15
    )
    shown = [m["text"] for (chat, _), m in sorted(env.fake.messages.items()) if chat == ALICE]
    assert shown == ["Let me check the weather first.", "It is sunny."], "the text before the tool call stays"


def _time_tool() -> Tool:
    @tool(risk="safe")
    async def get_time() -> str:
        """The time."""
        return "12:00"

    return get_time


async def test_a_long_streamed_answer_fills_the_preview_then_continues(env: Env) -> None:
    env.configure(mention_policy="all")
    paragraphs = [f"Paragraph {n}: " + "word " * 150 for n in range(9)]  # about 7,000 characters
    chunks = tuple(p + "\n\n" for p in paragraphs)
    await env.start(ScriptedModel([Streamed(chunks, delay_s=0.15)]))
    env.fake.push(env.fake.message("@chat write a lot", chat_id=GROUP))
    await env.fake.wait_for(lambda: any("Paragraph 8" in t for t in texts_of(env, "sendMessage", GROUP)), CEILING_S)
    shown = [m["text"] for (chat, _), m in sorted(env.fake.messages.items()) if chat == GROUP]
    assert len(shown) >= 2 and all(len(t) <= 4096 and "…" not in t for t in shown)
    assert [w for t in shown for w in t.split()] == "".join(chunks).split(), "every word once, in order"


async def test_a_429_during_edits_delays_them_and_the_final_text_arrives(env: Env) -> None:
    env.configure(mention_policy="all")
    env.fake.fail("editMessageText", status=429, retry_after=1)
    preview = shown_in(env, "sendMessage", chat_id=GROUP)  # the answer comes after a preview: its edits get the 429
    await env.start(ScriptedModel([Streamed(ANSWER, gate=lambda k: preview(1))]))
    env.fake.push(env.fake.message("@chat help me with my trip", chat_id=GROUP))
    await env.fake.wait_for(lambda: WHOLE in texts_of(env, "editMessageText", GROUP), CEILING_S)
    assert [m["text"] for (chat, _), m in env.fake.messages.items() if chat == GROUP] == [WHOLE]
    assert any(c.status == 429 for c in env.fake.of("editMessageText", ok=None)), "the platform refused once"
