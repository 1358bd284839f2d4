"""The Telegram adapter end to end: real aiogram → fake Bot API on 127.0.0.1, real Gateway (store in tmp_path).

The fake validates what Telegram validates (HTML, 4,096 units, 64-byte callback data,
"message is not modified"), so a call it answered with 200 is one Telegram would take.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiogram.types import Update

from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings
from bot.events import Button, ChatKey, OutboundMessage
from channels import formatting
from channels.telegram import TelegramChannel, delivery, menu
from channels.telegram import outbound as outbound_module
from channels.telegram.delivery import Pacer
from channels.telegram.inbound import BotIdentity, message_event
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.helpers.telegram import ALICE, BOB, FORUM, GROUP, Env, approve, started

DELETE = call("delete_cache", {"path": "/tmp/build"}, id="c1")
SECRET = "webhook-secret-0123"


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


# -- polling, private chats, groups, topics ------------------------------------------------------


async def test_private_message_while_down_is_answered_after_start(env: Env) -> None:
    env.configure()
    env.fake.webhook_url = "https://old.example/hook"  # a leftover webhook blocks getUpdates until deleted
    env.fake.push(env.fake.message("hello"))  # arrived while the bot was down
    model = ScriptedModel(["Hi **there** <3"])
    gateway = await env.start(model)
    reply = await env.reply("Hi there <3")
    assert env.fake.marks(reply) == [("bold", "there")] and not reply.get("parse_mode"), "text + entities"
    assert "reply_parameters" not in reply, "a private chat needs no quote"
    assert model.requests[0].messages[-1].text == "hello"
    delete = env.fake.of("deleteWebhook")
    assert delete and delete[0].params.get("drop_pending_updates") in (None, "false", "False")
    first_poll = env.fake.calls.index(env.fake.of("getUpdates")[0])
    assert env.fake.calls.index(delete[0]) < first_poll
    assert [c["command"] for c in env.fake.commands] == [c for c, _ in menu.COMMANDS]
    await env.fake.wait_for(lambda: not env.fake.pending)  # confirmed by the next getUpdates offset
    assert gateway.channels[0].name == "telegram"
    model.assert_complete()


async def test_group_answers_only_mentions_replies_and_commands(env: Env) -> None:
    model = ScriptedModel(["Answer one.", "Answer two."])
    await env.start(model)
    env.fake.push(env.fake.message("hello everyone", chat_id=GROUP))
    env.fake.push(env.fake.message("/help@other_bot", chat_id=GROUP))
    mention = env.fake.push(env.fake.message("@test_bot, what is 🙂 up?", chat_id=GROUP))
    reply = await env.reply("Answer one.", GROUP)
    assert model.requests[0].messages[-1].text == "what is 🙂 up?", "the mention is stripped (UTF-16 offsets)"
    assert reply["reply_parameters"]["message_id"] == mention["message"]["message_id"], "a group reply quotes"
    ref = next(f"{c}:{m}" for (c, m), msg in env.fake.messages.items() if msg["text"] == "Answer one.")
    chat_id, _, message_id = ref.partition(":")
    env.fake.push(env.fake.message("tell me more", chat_id=GROUP, reply_to=(int(chat_id), int(message_id))))
    await env.reply("Answer two.", GROUP)
    env.fake.push(env.fake.message("/whoami@test_bot", chat_id=GROUP, user_id=BOB, name="Bob"))
    whoami = await env.reply("You are 222 (Bob)", GROUP)
    assert "telegram:-1001" in whoami["text"]
    assert len(model.requests) == 2, "the unmentioned message and the other bot's command were ignored"
    assert not any("Commands:" in t for t in env.fake.sent_texts(GROUP))
    model.assert_complete()


async def test_forum_topic_is_a_thread(env: Env) -> None:
    model = ScriptedModel(["In the topic."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@test_bot hi", chat_id=FORUM, thread_id=77))
    reply = await env.reply("In the topic.", FORUM)
    assert reply["message_thread_id"] == 77  # sendMessage posts JSON
    history = await gateway.store.history(f"telegram:{FORUM}:77")
    assert [m.text for m in history] == ["hi", "In the topic."]
    model.assert_complete()


async def test_typing_is_refreshed_until_the_reply(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbound_module, "TYPING_REFRESH_S", 0.05)
    release = asyncio.Event()

    async def slow(_request: Any) -> str:
        await release.wait()
        return "Done thinking."

    gateway = await env.start(ScriptedModel([slow]))
    env.fake.push(env.fake.message("@test_bot think hard", chat_id=FORUM, thread_id=9))
    await env.fake.wait_for(lambda: len(env.fake.of("sendChatAction")) >= 3)
    release.set()
    await env.reply("Done thinking.", FORUM)
    assert not env.adapter(gateway)._out._typing, "the reply stopped the typing indicator"
    typing = env.fake.of("sendChatAction")
    assert {(c.params["chat_id"], c.params["action"], c.params["message_thread_id"]) for c in typing} == {
        (str(FORUM), "typing", "9")
    }


# -- buttons ---------------------------------------------------------------------------------------


async def test_tool_confirm_by_inline_button(env: Env) -> None:
    model = ScriptedModel([DELETE, "Deleted the build cache."])
    await env.start(model, tools=env.tools())
    env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    assert 'delete_cache(path="/tmp/build")' in env.fake.messages[_key(ref)]["text"]
    assert all(len(data.encode()) <= 64 for data in buttons.values())
    assert env.runs == []
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted the build cache.")
    assert env.runs == ["/tmp/build"], "the tool ran exactly once"
    answers = env.fake.of("answerCallbackQuery")
    assert len(answers) == 1 and answers[0].params.get("text") == "✓"
    edit = env.fake.of("editMessageText")[-1]
    assert f"{edit.params['chat_id']}:{edit.params['message_id']}" == ref
    assert "Approved by Alice" in edit.params["text"] and not env.fake.buttons(ref), "buttons removed"
    assert env.fake.calls.index(answers[0]) < env.fake.calls.index(edit), "the press is answered at once"
    model.assert_complete()


async def test_other_users_and_stale_presses_get_a_toast(env: Env) -> None:
    model = ScriptedModel([DELETE, "Deleted."])
    await env.start(model, tools=env.tools())
    env.fake.push(env.fake.message("@test_bot @react delete the build cache", chat_id=GROUP))
    ref, buttons = await env.prompt(GROUP)
    env.fake.push(env.fake.press(ref, approve(buttons), user_id=BOB, name="Bob"))
    await env.fake.wait_for(lambda: env.fake.of("answerCallbackQuery"))
    refused = env.fake.of("answerCallbackQuery")[0].params["text"]
    assert refused == "Only the person who was asked (or an admin) can answer this."
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted.", GROUP)
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.fake.wait_for(lambda: len(env.fake.of("answerCallbackQuery")) == 3)
    assert env.fake.of("answerCallbackQuery")[2].params["text"] == "This request is no longer pending."
    assert env.runs == ["/tmp/build"]
    assert not any("Only the person" in t for t in env.fake.sent_texts(GROUP)), "a refused press is not published"
    model.assert_complete()


async def test_press_after_restart_resumes_and_duplicates_are_dropped(env: Env) -> None:
    tools = env.tools()
    first = await env.start(ScriptedModel([DELETE]), tools=tools)
    asked = env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    await env.fake.wait_for(lambda: not env.fake.pending)
    await env.stop(first)

    model = ScriptedModel(["Deleted after the restart."])
    await env.start(model, tools=tools)  # a new adapter and gateway, the same database
    env.fake.push(dict(asked))  # unconfirmed before a crash, so redelivered: the store knows the update id
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted after the restart.")
    assert env.runs == ["/tmp/build"]
    assert len(model.requests) == 1
    edit = env.fake.of("editMessageText")[-1]
    assert f"{edit.params['chat_id']}:{edit.params['message_id']}" == ref
    assert len(env.fake.of("setMyCommands")) == 1, "the menu is set only when it changed"
    assert len(env.fake.of("getMyCommands")) == 2
    prompts = [t for t in env.fake.sent_texts() if "delete_cache" in t]
    assert len(prompts) == 1
    model.assert_complete()


# -- long texts, flood control ----------------------------------------------------------------


async def test_long_reply_with_code_block_is_split_into_valid_messages(env: Env) -> None:
    paragraphs = [f"Paragraph {i}: " + "words & <symbols> " * 45 for i in range(8)]
    code = "\n".join(f"line_{i} = compute({i}) < limit" for i in range(200))
    text = "\n\n".join([*paragraphs[:4], f"```python\n{code}\n```", *paragraphs[4:]])
    assert len(text) > 10_000
    model = ScriptedModel([text])
    await env.start(model)
    env.fake.push(env.fake.message("write a lot"))
    await env.reply("Paragraph 7")
    sent = [c.params for c in env.fake.of("sendMessage") if int(c.params["chat_id"]) == ALICE]
    assert len(sent) >= 3 and all(c.status == 200 for c in env.fake.of("sendMessage", ok=None))
    assert all(formatting.utf16_len(p["text"]) <= 4096 for p in sent)  # and the fake checked the entities
    squeeze = re.compile(r"\s+")
    whole = formatting.to_telegram(text).text
    assert squeeze.sub("", "".join(p["text"] for p in sent)) == squeeze.sub("", whole), "everything, in order"
    in_code = [p for p in sent if "line_" in p["text"]]
    assert len(in_code) >= 2, "the code block continues in the next message"
    assert all(any(kind == "pre" and "line_" in covered for kind, covered in env.fake.marks(p)) for p in in_code)
    model.assert_complete()


async def test_flood_control_429_is_waited_out(env: Env) -> None:
    model = ScriptedModel(["Delivered despite the flood limit."])
    await env.start(model)
    env.fake.fail("sendMessage", retry_after=1)
    env.fake.push(env.fake.message("hello"))
    await env.reply("Delivered despite the flood limit.")
    attempts = env.fake.of("sendMessage", ok=None)
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[0].params["text"] == attempts[1].params["text"]
    model.assert_complete()


async def test_the_token_never_reaches_the_logs(
    env: Env, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(delivery, "NETWORK_BACKOFF_S", (0.01, 0.01, 0.01))
    model = ScriptedModel(["Still delivered."])
    await env.start(model)
    env.fake.fail("sendMessage", status=500)
    env.fake.fail("getUpdates", status=502)
    env.fake.push(env.fake.message("hello"))
    await env.reply("Still delivered.")
    assert env.settings is not None
    unreachable = env.settings.channels.telegram.model_copy(update={"api_base": "http://127.0.0.1:9"})
    channel = TelegramChannel(unreachable)
    with pytest.raises(delivery.TelegramDeliveryError) as failed:
        await channel.send(OutboundMessage(chat=ChatKey(channel="telegram", chat_id="1"), text="x"))
    await channel.stop()
    assert TOKEN not in str(failed.value)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert TOKEN not in record.getMessage() and TOKEN not in (record.exc_text or "")
    assert TOKEN not in caplog.text
    model.assert_complete()


# -- webhook ---------------------------------------------------------------------------------------


async def test_webhook_checks_the_secret_and_answers_at_once(env: Env) -> None:
    env.configure(mode="webhook", webhook={"url": "https://bot.example/tg", "secret_token": SECRET}, http=True)
    release = asyncio.Event()

    async def slow(_request: Any) -> str:
        await release.wait()
        return "Webhook reply."

    model = ScriptedModel([slow])
    gateway = await env.start(model)
    hook = env.fake.of("setWebhook")
    assert hook and hook[0].params["url"] == "https://bot.example/tg" and hook[0].params["secret_token"] == SECRET
    assert not env.fake.of("getUpdates") and not env.fake.of("deleteWebhook")
    assert gateway.http is not None
    url = f"http://127.0.0.1:{gateway.http.port}/telegram/webhook"
    update = {"update_id": 9001, **env.fake.message("via webhook")}
    async with aiohttp.ClientSession() as session:
        for wrong in ({"X-Telegram-Bot-Api-Secret-Token": "nope"}, {}):
            async with session.post(url, json=update, headers=wrong) as resp:
                assert resp.status == 401
        assert not model.requests, "a request with a wrong secret changes nothing"
        headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        async with session.post(url, json=update, headers=headers) as resp:
            assert resp.status == 200
        await env.fake.wait_for(lambda: model.requests)
        assert not env.fake.of("sendMessage"), "200 came back while the model was still working"
        deep = "[" * 100_000 + "]" * 100_000  # absurdly nested JSON: refused, no traceback
        async with session.post(url, data=deep, headers={**headers, "Content-Type": "application/json"}) as resp:
            assert resp.status == 400
        async with session.post(url, json=update, headers=headers) as resp:
            assert resp.status == 200  # Telegram's retry of the same update
        release.set()
        await env.reply("Webhook reply.")
        await gateway.bus.join()
    assert env.fake.sent_texts(ALICE) == ["Webhook reply."]
    assert len(model.requests) == 1
    model.assert_complete()


# -- mapping details (no server) ---------------------------------------------------------------


def test_captions_media_and_commands_map_faithfully() -> None:
    fake = FakeTelegram()
    me = BotIdentity(id=fake.bot_id, username="test_bot")

    def event(update: dict[str, Any]) -> Any:
        parsed = Update.model_validate({"update_id": 5, **update})
        assert parsed.message is not None
        return message_event(parsed.update_id, parsed.message, me)

    doc = {
        "document": {
            "file_id": "F1",
            "file_unique_id": "U1",
            "file_name": "r.pdf",
            "mime_type": "application/pdf",
            "file_size": 9,
        }
    }
    captioned = event(fake.message("@test_bot summarise this", caption=True, chat_id=GROUP, extra=doc))
    assert captioned.text == "summarise this" and captioned.mentions_bot and not captioned.is_direct
    (attachment,) = captioned.attachments
    assert (attachment.kind, attachment.name, attachment.mime_type, attachment.ref) == (
        "document",
        "r.pdf",
        "application/pdf",
        "F1",
    )
    photo = {
        "photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
            {"file_id": "big", "file_unique_id": "b", "width": 900, "height": 900, "file_size": 1234},
        ]
    }
    only_photo = event(fake.message("", extra=photo))
    assert only_photo.text == "" and only_photo.attachments[0].ref == "big" and only_photo.is_direct
    command = event(fake.message("/pending@test_bot now", chat_id=GROUP))
    assert command.text == "/pending now" and command.mentions_bot
    assert event(fake.message("/help@other_bot", chat_id=GROUP)) is None
    plain = event(fake.message("mentioning @someone_else", chat_id=GROUP))
    assert not plain.mentions_bot and plain.text == "mentioning @someone_else"
    topic = event(fake.message("in a topic", chat_id=FORUM, thread_id=5))
    assert topic.chat.thread_id == "5" and topic.reply_to is None and not topic.mentions_bot
    assert str(topic.chat) == f"telegram:{FORUM}:5" and topic.id == "5"


async def test_send_before_start_edits_and_their_edge_cases(env: Env) -> None:
    settings = env.configure()
    channel = TelegramChannel(settings.channels.telegram)  # never started: crash recovery sends first
    chat = ChatKey(channel="telegram", chat_id=str(ALICE))
    buttons = ((Button(label="✅ Approve", payload="v1:abcdef:nonce1:a"),),)
    ref = await channel.send(OutboundMessage(chat=chat, text="Run it?", buttons=buttons))
    assert ref is not None and env.fake.buttons(ref) == [
        [{"text": "✅ Approve", "callback_data": "v1:abcdef:nonce1:a"}]
    ]
    same = OutboundMessage(chat=chat, text="Run it?", buttons=buttons, edit_of=ref)
    assert await channel.send(same) == ref, "'message is not modified' counts as done"
    assert env.fake.of("editMessageText", ok=False)
    assert await channel.send(OutboundMessage(chat=chat, text="Run it?\n\n✅ Approved.", edit_of=ref)) == ref
    assert env.fake.buttons(ref) == [] and "Approved" in env.fake.messages[_key(ref)]["text"]
    gone = f"{ALICE}:99999"
    again = await channel.send(OutboundMessage(chat=chat, text="Edited or new", edit_of=gone))
    assert again is not None and again != gone and env.fake.sent_texts()[-1] == "Edited or new"
    await channel.send(OutboundMessage(chat=chat, text="🎯 routed", kind="notice"))
    assert env.fake.of("sendMessage")[-1].params["disable_notification"] is True, "notices are silent"
    assert await channel.send(OutboundMessage(chat=chat, text="  ")) is None
    await channel.stop()


def test_pacing_buckets_allow_a_burst_then_space_messages() -> None:
    now = [100.0]
    pacer = Pacer(clock=lambda: now[0])
    assert [pacer.delay("42") for _ in range(5)] == [0.0] * 5
    assert pacer.delay("42") == pytest.approx(1.0)
    now[0] = 103.0
    assert pacer.delay("42") == 0.0
    assert [pacer.delay("-100") for _ in range(5)] == [0.0] * 5
    assert pacer.delay("-100") == pytest.approx(3.0), "groups get 20 messages a minute"
    pacer.hold("-7", 30.0)
    assert pacer.delay("-7") == pytest.approx(30.0) and pacer.delay("43") == 0.0


def _key(ref: str) -> tuple[int, int]:
    chat_id, _, message_id = ref.rpartition(":")
    return int(chat_id), int(message_id)
