"""The Discord adapter end to end: real discord.py ⇄ a fake Discord (REST + gateway) on 127.0.0.1, the real
gateway (store in tmp_path) and a scripted model."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from bot.events import Action, Button, ChatKey, InboundMessage, OutboundMessage
from channels.discord import DiscordChannel
from channels.discord.calls import endpoints
from tests.conftest import RecordingInbox
from tests.fakes.discord_server import (
    ALICE,
    BOT_ID,
    BOT_USER,
    CHANNEL_ID,
    DM_CHANNEL_ID,
    MALLORY,
    NEW_THREAD_ID,
    OTHER_BOT,
    OTHER_CHANNEL_ID,
    THREAD_ID,
    FakeDiscord,
    buttons,
)
from tests.helpers.discord import Bot, fake, make_bot  # fake, make_bot: fixtures, used by name below
from tests.waiting import CEILING_S, eventually

MENTION = f"<@{BOT_ID}>"
MESSAGE_CONTENT_INTENT = 1 << 15


def risky(runs: list[str]) -> list[Tool]:
    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str) -> str:
        """Delete a build cache directory."""
        runs.append(path)
        return f"deleted {path}"

    return [delete_cache]


def last_user_text(model: ScriptedModel) -> str:
    return next(m.text or "" for m in reversed(model.requests[-1].messages) if m.role == "user")


async def test_message_gets_a_reply_with_typing_first(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")

    async def slow(_request: Any) -> str:  # an answer that takes a while shows the typing indicator first
        await eventually(lambda: fake.called("POST", rf"^/channels/{CHANNEL_ID}/typing$"), what="typing")
        return "Hello Alice!"

    model = ScriptedModel([slow])
    await bot.start(model)
    assert fake.intents & MESSAGE_CONTENT_INTENT
    asked = await fake.message("hello there")
    assert await bot.replies(1) == ["Hello Alice!"]
    post = fake.posts(CHANNEL_ID)[0]
    assert str(post.body["message_reference"]["message_id"]) == asked
    assert post.body["allowed_mentions"]["parse"] == ["users"]
    typing = fake.called("POST", rf"^/channels/{CHANNEL_ID}/typing$")
    assert typing and fake.calls.index(typing[0]) < fake.calls.index(post)
    assert last_user_text(model) == "hello there"
    history = await bot.gateway.store.history(f"discord:{CHANNEL_ID}")
    assert [m.text for m in history] == ["hello there", "Hello Alice!"]
    model.assert_complete()


async def test_guild_mention_policy_bots_and_allowed_channels(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(allowed_channels=[int(CHANNEL_ID)])
    model = ScriptedModel(["Only this one."])
    await bot.start(model)
    await fake.message("nobody asked me")
    await fake.message(f"{MENTION} from the wrong channel", channel_id=OTHER_CHANNEL_ID, mentions=(BOT_USER,))
    await fake.message(f"{MENTION} a bot talking", author=OTHER_BOT, mentions=(BOT_USER,))
    await fake.message(f"{MENTION} what is up?", mentions=(BOT_USER,))
    assert await bot.replies(1) == ["Only this one."]
    assert last_user_text(model) == "what is up?", "the bot's own mention is stripped"
    assert len(model.requests) == 1
    model.assert_complete()


async def test_direct_message_is_answered_without_a_mention(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot()
    model = ScriptedModel(["Hi in private."])
    await bot.start(model)
    await fake.message("psst", dm=True)
    assert await bot.replies(1, DM_CHANNEL_ID) == ["Hi in private."]
    assert await bot.gateway.store.history(f"discord:{DM_CHANNEL_ID}")
    model.assert_complete()


async def test_message_in_a_thread_is_answered_in_that_thread(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(allowed_channels=[CHANNEL_ID])
    model = ScriptedModel(["Answer in the thread."])
    await bot.start(model)
    await fake.message(f"{MENTION} hello from the thread", channel_id=THREAD_ID, mentions=(BOT_USER,))
    assert await bot.replies(1, THREAD_ID) == ["Answer in the thread."]
    assert fake.posts(CHANNEL_ID) == []
    history = await bot.gateway.store.history(f"discord:{CHANNEL_ID}:{THREAD_ID}")
    assert [m.text for m in history] == ["hello from the thread", "Answer in the thread."]
    model.assert_complete()


async def prompt_and_payload(bot: Bot, fake: FakeDiscord, label: str) -> tuple[dict[str, Any], str]:
    await fake.message(f"{MENTION} @react delete the build cache", mentions=(BOT_USER,))
    await bot.replies(1)
    prompt = fake.message_with_buttons()
    found = [b for b in buttons(prompt) if label in b["label"]]
    assert found, [b["label"] for b in buttons(prompt)]
    return prompt, found[0]["custom_id"]


async def test_tool_confirm_button_press_runs_the_tool_once_and_updates_the_prompt(
    make_bot: Any, fake: FakeDiscord
) -> None:
    runs: list[str] = []
    bot = make_bot()
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1"), "Deleted the build cache."])
    await bot.start(model, risky(runs))
    prompt, approve = await prompt_and_payload(bot, fake, "Approve")
    assert 'delete\\_cache(path="/tmp/build")' in prompt["content"] and runs == [], "Discord markdown"
    assert re.fullmatch(r"v1:\w+:\w+:\w+", approve) and len(approve) <= 100
    assert buttons(prompt)[0]["style"] == 3, "approve is green"
    pressed = await fake.press(approve, message_id=prompt["id"])
    await bot.replies(2)
    callback = fake.called("POST", rf"^/interactions/{pressed}/token-{pressed}/callback$")
    assert [c.body["type"] for c in callback] == [6], "deferred at once (DEFERRED_UPDATE_MESSAGE)"
    assert runs == ["/tmp/build"]
    assert fake.texts()[-1] == "Deleted the build cache."
    edits = fake.called("PATCH", rf"^/webhooks/\d+/token-{pressed}/messages/@original$")
    assert len(edits) == 1 and "Approved by" in edits[0].body["content"] and edits[0].body["components"] == []
    assert fake.messages[prompt["id"]]["components"] == []
    model.assert_complete()


async def test_another_users_press_is_refused_ephemerally_and_not_run(make_bot: Any, fake: FakeDiscord) -> None:
    runs: list[str] = []
    bot = make_bot()
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1"), "Done."])
    await bot.start(model, risky(runs))
    prompt, approve = await prompt_and_payload(bot, fake, "Approve")
    pressed = await fake.press(approve, message_id=prompt["id"], user=MALLORY)
    await fake.wait_for(lambda: bool(fake.called("POST", rf"^/webhooks/\d+/token-{pressed}$")))
    await bot.settle()
    followup = fake.called("POST", rf"^/webhooks/\d+/token-{pressed}$")[0]
    assert followup.body["flags"] & 64, "ephemeral"
    assert "Only the person who was asked" in followup.body["content"]
    assert runs == [] and buttons(fake.messages[prompt["id"]]), "the prompt still waits"
    assert len(fake.posts()) == 1, "nothing was said in the channel"
    pressed = await fake.press(approve, message_id=prompt["id"], user=ALICE)
    await bot.replies(2)
    assert runs == ["/tmp/build"]
    model.assert_complete()


async def test_press_after_a_restart_resumes_with_a_new_client(make_bot: Any, fake: FakeDiscord) -> None:
    runs: list[str] = []
    bot = make_bot()
    first = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1")])
    await bot.start(first, risky(runs))
    prompt, approve = await prompt_and_payload(bot, fake, "Approve")
    await bot.gateway.stop(timeout=5)
    first.assert_complete()

    second = ScriptedModel(["Deleted after the restart."])
    await bot.start(second, risky(runs))
    await fake.press(approve, message_id=prompt["id"])
    assert (await bot.replies(2))[-1] == "Deleted after the restart."
    assert runs == ["/tmp/build"]
    assert "Approved by" in fake.messages[prompt["id"]]["content"]
    assert fake.messages[prompt["id"]]["components"] == []
    second.assert_complete()


async def test_prompt_answered_by_text_is_edited_through_the_channel(make_bot: Any, fake: FakeDiscord) -> None:
    # No interaction token to edit with (as after 15 minutes or a restart): the channel message endpoint.
    runs: list[str] = []
    bot = make_bot()
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1"), "Done by text."])
    await bot.start(model, risky(runs))
    prompt, _ = await prompt_and_payload(bot, fake, "Approve")
    await fake.message(f"{MENTION} yes", mentions=(BOT_USER,))
    await bot.replies(2)
    edits = fake.called("PATCH", rf"^/channels/{CHANNEL_ID}/messages/{prompt['id']}$")
    assert len(edits) == 1 and edits[0].body["components"] == []
    assert runs == ["/tmp/build"]
    model.assert_complete()


async def test_long_reply_is_split_into_2000_character_messages(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")
    paragraphs = [f"Paragraph {i}: " + "word " * 100 for i in range(10)]
    long_text = "\n\n".join(p.strip() for p in paragraphs)
    assert len(long_text) >= 5000
    model = ScriptedModel([long_text])
    await bot.start(model)
    await fake.message("tell me everything")
    await fake.wait_for(lambda: sum(len(t) for t in fake.texts()) >= len(long_text) - 20)
    await bot.settle()
    texts = fake.texts()
    assert len(texts) >= 3 and all(len(t) <= 2000 for t in texts)
    assert re.sub(r"\s+", " ", " ".join(texts)) == re.sub(r"\s+", " ", long_text)
    assert "message_reference" in fake.posts()[0].body and "message_reference" not in fake.posts()[1].body
    model.assert_complete()


async def test_rate_limited_reply_is_retried_and_delivered_once(
    make_bot: Any, fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bot = make_bot(mention_policy="all")
    model = ScriptedModel(["Worth the wait."])
    await bot.start(model)
    # One 429 that discord.py retries itself (Discord's Via header), one it raises (a proxy's): we retry that.
    fake.rate_limit(r"^POST /channels/\d+/messages$", times=1, via=True)
    fake.rate_limit(r"^POST /channels/\d+/messages$", times=1, via=False)
    await fake.message("hello?")
    assert await bot.replies(1) == ["Worth the wait."]
    limited = [c for c in fake.calls if c.status == 429]
    assert len(limited) == 2
    nonces = {c.body["nonce"] for c in fake.calls if c.method == "POST" and c.path.endswith("/messages")}
    assert len(nonces) == 1, "every retry carries the same nonce, so Discord posts it once"
    assert "rate limited" in caplog.text and "dGVzdA.test.token" not in caplog.text
    model.assert_complete()


async def test_send_works_before_start_and_buttons_fit_discord(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot()
    adapter = DiscordChannel(bot.settings.channels.discord)
    many = tuple(
        tuple(Button(label=f"B{r}{c}", payload=f"v1:abcdef:nonce1:c{r}{c}") for c in range(7)) for r in range(5)
    )
    try:
        ref = await adapter.send(
            OutboundMessage(chat=ChatKey(channel="discord", chat_id=CHANNEL_ID), text="recovered", buttons=many)
        )
        assert ref is not None and ref.startswith(f"{CHANNEL_ID}:")
        posted = fake.posts(CHANNEL_ID)[0].body
        rows = posted["components"]
        assert len(rows) <= 5 and all(len(r["components"]) <= 5 for r in rows)
        assert sum(len(r["components"]) for r in rows) == 25
        edited = await adapter.send(
            OutboundMessage(chat=ChatKey(channel="discord", chat_id=CHANNEL_ID), text="**done**", edit_of=ref)
        )
        assert edited == ref
        assert fake.messages[ref.split(":")[1]]["content"] == "**done**"
        assert fake.identifies == 0, "REST only, no gateway before start"
    finally:
        await adapter.stop()


async def test_a_reply_sent_again_after_a_crash_is_not_posted_twice(make_bot: Any, fake: FakeDiscord) -> None:
    """The outbox resends what it cannot know was delivered; the message's key becomes Discord's nonce."""
    bot = make_bot()
    adapter = DiscordChannel(bot.settings.channels.discord)
    reply = OutboundMessage(chat=ChatKey(channel="discord", chat_id=CHANNEL_ID), text="the answer", key="reply:run-1")
    try:
        first = await adapter.send(reply)
        again = await adapter.send(reply)  # a new process, after a crash: same key
        other = await adapter.send(reply.model_copy(update={"key": "reply:run-2"}))
    finally:
        await adapter.stop()
    assert first == again and other != first
    assert [p.body["content"] for p in fake.posts(CHANNEL_ID)].count("the answer") == 3  # three requests...
    assert len([m for m in fake.messages.values() if m["content"] == "the answer"]) == 2  # ...two messages


def test_endpoints_and_button_rows() -> None:
    assert endpoints("http://127.0.0.1:5000") == ("http://127.0.0.1:5000/api/v10", "ws://127.0.0.1:5000/gateway")
    assert endpoints("https://proxy.example/api/v9/", "wss://gw.example/") == (
        "https://proxy.example/api/v9",
        "wss://gw.example/",
    )
    assert endpoints(None)[0] == "https://discord.com/api/v10"


async def test_inbound_mapping_chat_keys_mentions_replies_and_attachments(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot()
    adapter = DiscordChannel(bot.settings.channels.discord)
    bus = RecordingInbox()
    try:
        await adapter.start(bus)
        await fake.wait_identified()
        ref = await adapter.send(OutboundMessage(chat=ChatKey(channel="discord", chat_id=CHANNEL_ID), text="I said"))
        assert ref is not None
        picture = {
            "id": "960000000000000001",
            "filename": "cat.png",
            "size": 1234,
            "url": "https://cdn.example/cat.png",
            "proxy_url": "https://cdn.example/cat.png",
            "content_type": "image/png",
        }
        await fake.message(f"look {MENTION}  here", mentions=(BOT_USER,), attachments=(picture,))
        await fake.message("answering you", reply_to=ref.split(":")[1])
        await fake.message(f"{MENTION} hi", channel_id=NEW_THREAD_ID, mentions=(BOT_USER,))
        await fake.message("/help", dm=True)
        await bus.wait_for(4)
        first, reply, thread, dm = bus.events
        assert isinstance(first, InboundMessage) and first.text == "look here" and first.mentions_bot
        assert first.sender.id == ALICE["id"] and first.sender.name == "Alice" and not first.is_direct
        assert [(a.kind, a.name, a.mime_type, a.size) for a in first.attachments] == [
            ("image", "cat.png", "image/png", 1234)
        ]
        assert isinstance(reply, InboundMessage) and reply.mentions_bot and reply.reply_to == ref.split(":")[1]
        assert thread.chat == ChatKey(channel="discord", chat_id=CHANNEL_ID, thread_id=NEW_THREAD_ID)
        assert isinstance(dm, InboundMessage) and dm.is_direct and dm.text == "/help"
        assert dm.chat == ChatKey(channel="discord", chat_id=DM_CHANNEL_ID)
        # A press in the thread: the same chat key, acknowledged at once, the prompt as the message reference.
        prompt_ref = await adapter.send(
            OutboundMessage(
                chat=thread.chat, text="Sure?", buttons=((Button(label="✅ Yes", payload="v1:abcdef:nonce1:a"),),)
            )
        )
        assert prompt_ref is not None and prompt_ref.startswith(f"{NEW_THREAD_ID}:")
        pressed = await fake.press("v1:abcdef:nonce1:a", message_id=prompt_ref.split(":")[1])
        await bus.wait_for(5)
        action = bus.events[-1]
        assert isinstance(action, Action) and action.id == pressed and action.payload == "v1:abcdef:nonce1:a"
        assert action.chat == thread.chat and action.message_ref == prompt_ref
        assert fake.called("POST", rf"^/interactions/{pressed}/")
        # A component that is not ours is told so (ephemeral), not left to time out, and not published.
        foreign = await fake.press("legacy-button", message_id=prompt_ref.split(":")[1])
        await fake.wait_for(lambda: bool(fake.called("POST", rf"^/interactions/{foreign}/")))
        answer = fake.called("POST", rf"^/interactions/{foreign}/")[0].body
        assert answer["type"] == 4 and answer["data"]["flags"] & 64 and "no longer active" in answer["data"]["content"]
        assert len(bus.events) == 5
    finally:
        await adapter.stop()


async def test_without_the_message_content_intent_start_up_says_where_to_turn_it_on(
    make_bot: Any, fake: FakeDiscord
) -> None:
    from bot.config.settings import ConfigError

    fake.refuse_privileged_intents = True
    bot = make_bot()
    adapter = DiscordChannel(bot.settings.channels.discord)
    with pytest.raises(ConfigError) as refused:
        await adapter.start(RecordingInbox())
    text = str(refused.value)
    assert "Message Content intent" in text and "Developer Portal" in text and "Privileged Gateway Intents" in text


async def test_a_streamed_answer_is_one_message_edited_until_it_is_whole(make_bot: Any, fake: FakeDiscord) -> None:
    from agents.models.scripted import Streamed

    whole = "## Answer\nFirst part, second part, and the end."
    pattern = rf"^/channels/{DM_CHANNEL_ID}/messages(/\d+)?$"

    async def shown(k: int) -> None:  # the next piece once the text so far is on the screen (no race with time)
        await fake.wait_for(lambda: len(fake.called("POST", pattern)) + len(fake.called("PATCH", pattern)) >= k)

    bot = make_bot()
    await bot.start(ScriptedModel([Streamed(("## Answer\nFirst part, ", "second part, ", "and the end."), gate=shown)]))
    await fake.message("@chat tell me", dm=True)
    await fake.wait_for(lambda: any(m.get("content") == whole for m in fake.messages.values()), CEILING_S)
    created = fake.called("POST", rf"^/channels/{DM_CHANNEL_ID}/messages$")
    edits = fake.called("PATCH", rf"^/channels/{DM_CHANNEL_ID}/messages/\d+$")
    assert len(created) == 1 and "…" in created[0].body["content"], "one message, shown while it was written"
    assert len(edits) >= 2 and edits[-1].body["content"] == whole, "edited as it grew, ends as the answer"
    assert [m["content"] for m in fake.messages.values()] == [whole], "Discord renders the heading itself"
