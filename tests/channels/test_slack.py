"""The Slack channel end to end: the real slack-bolt / slack_sdk against a fake Web API on 127.0.0.1,
signed requests into the gateway's HTTP server (or a loopback Socket Mode websocket), and the real
Gateway with a scripted model."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from bot.config.settings import ConfigError, Settings
from bot.events import Button, ChatKey, OutboundMessage
from bot.gateway.app import Gateway
from channels.slack import SlackChannel, delivery
from channels.slack.delivery import TEXT_LIMIT, SlackDeliveryError
from channels.slack.inbound import BotIdentity, chat_key, inbound_message, post_from_event
from tests.conftest import RecordingInbox
from tests.fakes.slack_server import FakeSlack
from tests.helpers.slack import BOT_TOKEN, fake, make_slack, sign, texts  # fake, make_slack: fixtures, by name
from tests.waiting import CEILING_S, eventually

APP_TOKEN = "xapp-test-token"


class Counter:
    def __init__(self) -> None:
        self.runs: list[str] = []


def risky_tools(counter: Counter) -> list[Tool]:
    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str) -> str:
        """Delete a build cache directory."""
        counter.runs.append(path)
        return f"deleted {path}"

    return [delete_cache]


# -- requests and events ------------------------------------------------------------------------------


async def test_slack_start_up_and_forged_requests_keep_logs_quiet_and_free_of_message_text(
    make_slack: Any, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)  # bolt reads it on its own
    with caplog.at_level(logging.INFO):
        h = await make_slack()
        event = json.dumps({"type": "event_callback", "event": {"type": "message", "text": "my private words"}})
        assert (await h.post(event, "application/json", sign(event, secret="wrong")))[0] == 401
    assert "will be unused" not in caplog.text
    assert "my private words" not in caplog.text and "invalid signature" in caplog.text


async def test_url_verification_and_refused_requests(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack()
    body = json.dumps({"token": "legacy", "challenge": "challenge-123", "type": "url_verification"})
    status, text = await h.post(body, "application/json")
    assert status == 200 and "challenge-123" in text
    event = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention"}})
    assert (await h.post(event, "application/json", headers={}))[0] == 401
    assert (await h.post(event, "application/json", sign(event, secret="wrong")))[0] == 401
    assert (await h.post(event, "application/json", sign(event, ts=int(time.time()) - 600)))[0] == 401
    assert (await h.post(body, "application/json", sign(event)))[0] == 401, "a signature over another body"
    deep = '{"type": "event_callback", "event": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert (await h.post(deep, "application/json"))[0] == 400, "absurdly nested JSON: refused, no traceback"
    await h.settle()
    assert [c.method for c in fake.calls] == ["auth.test"], "auth.test once, nothing for refused requests"
    assert fake.calls[0].token == BOT_TOKEN


async def test_mention_is_answered_in_a_thread_under_it(make_slack: Any, fake: FakeSlack) -> None:
    fake.names["U1"] = "Ann"

    async def slow(_request: Any) -> str:  # an answer that takes a while marks the message first
        await eventually(lambda: fake.calls_to("reactions.add"), what="the eyes reaction")
        return "Hello **there**, Ann & co."

    h = await make_slack(slow)
    ts = await h.mention("hi, what's up?")
    posts = await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert len(posts) == 1
    assert posts[0]["channel"] == "C1" and posts[0]["thread_ts"] == ts
    assert posts[0]["text"] == "Hello *there*, Ann &amp; co."
    assert fake.calls_to("chat.postMessage")[0].token == BOT_TOKEN
    request = h.model.requests[0]
    assert request.messages[-1].text == "hi, what's up?", "the bot's mention is stripped"
    # No typing indicator for bots in Slack: a reaction marks the message while it is being answered.
    order = [c.method for c in fake.calls if c.method.startswith(("reactions", "chat"))]
    assert order == ["reactions.add", "chat.postMessage", "reactions.remove"]
    added = fake.calls_to("reactions.add")[0].params
    assert (added["channel"], added["timestamp"], added["name"]) == ("C1", ts, "eyes")
    # The thread is now the bot's: a reply there without a mention is addressed to it.
    h.model.add("Still here.")
    await h.message("and another thing", channel="C1", thread_ts=ts)
    await fake.wait_for(lambda: len(fake.posts()) == 2)
    await h.settle()
    assert fake.posts()[1]["thread_ts"] == ts and fake.posts()[1]["text"] == "Still here."
    assert len(h.model.requests[1].messages) > 1, "one conversation per thread"


async def test_without_reply_in_thread_a_mention_is_answered_in_the_channel(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack("In the channel.", reply_in_thread=False)
    await h.mention("hello")
    posts = await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert posts[0]["channel"] == "C1" and "thread_ts" not in posts[0]


async def test_replies_in_other_threads_and_plain_channel_messages_are_not_answered(
    make_slack: Any, fake: FakeSlack
) -> None:
    h = await make_slack("From the thread.")
    await h.message("people talking", channel="C1")
    await h.message("a reply among people", channel="C1", thread_ts="1500000000.000001")
    await h.settle()
    assert fake.posts() == [] and len(fake.calls_to("conversations.replies")) == 1
    # A thread the bot answered in before (e.g. before a restart) is found through conversations.replies.
    fake.thread_messages[("C1", "1500000000.000002")] = [{"user": "UBOT", "bot_id": "BBOT", "ts": "1500000000.000003"}]
    await h.message("a reply to the bot", channel="C1", thread_ts="1500000000.000002")
    posts = await fake.wait_for(lambda: fake.posts())
    assert posts[0]["thread_ts"] == "1500000000.000002" and posts[0]["text"] == "From the thread."


async def test_direct_message_is_answered_unthreaded(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack("Hi in private.")
    await h.message("hello <https://example.com|the docs> &amp; more")
    posts = await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert posts[0]["channel"] == "D1" and "thread_ts" not in posts[0]
    assert posts[0]["text"] == "Hi in private."
    assert h.model.requests[0].messages[-1].text == "hello [the docs](https://example.com) & more"


async def test_same_post_as_app_mention_and_message_is_answered_once(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack("Once.")
    ts = h.ts()
    await h.message("<@UBOT> hello", channel="C1", ts=ts)
    await h.mention("hello", ts=ts)
    await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert texts(fake.posts()) == ["Once."]
    assert fake.posts()[0]["thread_ts"] == ts


async def test_retried_event_is_answered_once(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack("Only once.")
    ts = h.ts()
    event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "ts": ts, "channel": "C1"}
    assert await h.event(event, event_id="EvSame") == 200
    assert await h.event(event, event_id="EvSame", retry=1) == 200
    assert await h.event(event, event_id="EvSame", retry=2) == 200
    await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert texts(fake.posts()) == ["Only once."]
    # A retry reaching a restarted gateway (nothing remembered in memory) is still recognised: the store has it.
    await h.stop()
    await h.start(ScriptedModel())
    assert await h.event(event, event_id="EvSame", retry=3) == 200
    await h.settle()
    assert texts(fake.posts()) == ["Only once."]


async def test_bot_messages_edits_and_other_subtypes_are_ignored(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack()  # the model has no step: any answer would fail the test
    ts = h.ts()
    await h.message("<@UBOT> from a bot", bot_id="B2", subtype="bot_message", user="")
    await h.message("<@UBOT> from another app's bot user", bot_id="B3")
    await h.message("my own words", user="UBOT")
    edited = {"type": "message", "text": "<@UBOT> edited", "user": "U1", "ts": ts}
    await h.message("", subtype="message_changed", message=edited, user="")
    await h.message("", subtype="message_deleted", deleted_ts=ts, user="")
    await h.message("<@UBOT> joined", subtype="channel_join", channel="C1")
    await h.mention("edited mention", edited={"user": "U1", "ts": ts})
    assert await h.event({"type": "reaction_added", "user": "U1", "reaction": "eyes", "item": {}}) == 200
    await h.settle()
    assert fake.posts() == []


# -- buttons -------------------------------------------------------------------------------------------------


async def test_tool_confirm_buttons_update_the_prompt_and_run_the_tool_once(make_slack: Any, fake: FakeSlack) -> None:
    counter = Counter()
    delete = call("delete_cache", {"path": "/tmp/build"}, id="c1")
    h = await make_slack(delete, "Deleted the build cache.", tools=risky_tools(counter), admins=[])
    ts = await h.mention("@react delete the build cache")
    await fake.wait_for(lambda: fake.posts())
    await h.settle()
    prompt = h.prompt()
    assert prompt["thread_ts"] == ts and "delete_cache" in prompt["text"]
    actions = [e for b in prompt["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert len({e["action_id"] for e in actions}) == len(actions) >= 2
    assert all(e["value"].startswith("v1:") for e in actions)
    assert counter.runs == []
    # Someone else's press is refused, to them only (ephemeral through response_url), and changes nothing.
    assert await h.press(prompt, "Approve", user="U2") == 200
    refusal = await fake.wait_for(lambda: fake.calls_to("response_url:press-U2"))
    await h.settle()
    assert refusal[0].params["response_type"] == "ephemeral" and "Only the person" in refusal[0].params["text"]
    assert counter.runs == [] and fake.calls_to("chat.update") == []
    assert await h.press(prompt, "Approve") == 200
    await fake.wait_for(lambda: "Deleted the build cache." in texts(fake.posts()))
    await h.settle()
    assert counter.runs == ["/tmp/build"]
    update = fake.calls_to("chat.update")[-1].params
    assert (update["channel"], update["ts"]) == ("C1", prompt["ts"])
    assert "Approved by" in update["text"] and update["blocks"] == []
    assert fake.posts()[-1]["thread_ts"] == ts
    # A second press of the used prompt changes nothing.
    assert await h.press(prompt, "Approve") == 200
    await h.settle()
    assert counter.runs == ["/tmp/build"]


async def test_press_after_a_gateway_restart_resumes(make_slack: Any, fake: FakeSlack, scripted: Any) -> None:
    counter = Counter()
    h = await make_slack(call("delete_cache", {"path": "/a"}, id="c1"), tools=risky_tools(counter))
    await h.mention("@react delete /a")
    await fake.wait_for(lambda: fake.posts())
    await h.settle()
    prompt = h.prompt()
    await h.stop()
    await h.start(scripted("Done after the restart."), risky_tools(counter))
    assert await h.press(prompt, "Approve") == 200
    await fake.wait_for(lambda: "Done after the restart." in texts(fake.posts()))
    await h.settle()
    assert counter.runs == ["/a"]
    update = fake.calls_to("chat.update")[-1].params
    assert update["ts"] == prompt["ts"] and "Approved" in update["text"]


# -- outbound ------------------------------------------------------------------------------------------------


async def test_long_reply_is_split(make_slack: Any, fake: FakeSlack) -> None:
    paragraphs = [f"Paragraph {i}: " + "word " * 150 for i in range(12)]
    h = await make_slack("\n\n".join(paragraphs))
    ts = await h.mention("tell me a long story")
    await fake.wait_for(lambda: any("Paragraph 11:" in p["text"] for p in fake.posts()))
    await h.settle()
    posts = fake.posts()
    assert len(posts) >= 3 and all(len(p["text"]) <= TEXT_LIMIT for p in posts)
    assert all(p["thread_ts"] == ts for p in posts)
    joined = " ".join(texts(posts))
    assert all(f"Paragraph {i}:" in joined for i in range(12))


async def test_rate_limit_is_waited_out_and_the_reply_still_sent(make_slack: Any, fake: FakeSlack) -> None:
    h = await make_slack("Worth the wait.")
    fake.fail("chat.postMessage", retry_after=1)
    await h.mention("hello")
    await fake.wait_for(lambda: fake.posts(), CEILING_S)
    await h.settle()
    methods = [c.method for c in fake.calls if c.method.startswith("chat.postMessage")]
    assert methods == ["chat.postMessage!429", "chat.postMessage"]
    assert texts(fake.posts()) == ["Worth the wait."]


async def test_send_before_start_and_edits_and_buttons(fake: FakeSlack, make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(
        channels={"slack": {"enabled": True, "bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base": fake.base_url}}
    )
    channel = SlackChannel(settings.channels.slack)
    chat = ChatKey(channel="slack", chat_id="C9", thread_id="1600000000.000001")
    rows = ((Button(label="Approve", payload="v1:a:n:y"), Button(label="x" * 100, payload="v1:a:n:n")),)
    ref = await channel.send(OutboundMessage(chat=chat, text="Run `rm`? <b>", buttons=rows))
    assert ref is not None and ref.startswith("C9:")
    posted = fake.posts()[0]
    assert posted["thread_ts"] == "1600000000.000001" and posted["text"] == "Run `rm`? &lt;b&gt;"
    section, actions = posted["blocks"]
    assert section["text"] == {"type": "mrkdwn", "text": "Run `rm`? &lt;b&gt;"}
    assert [e["value"] for e in actions["elements"]] == ["v1:a:n:y", "v1:a:n:n"]
    assert len(actions["elements"][1]["text"]["text"]) <= 75
    assert await channel.send(OutboundMessage(chat=chat, text="**Approved**", edit_of=ref)) == ref
    update = fake.calls_to("chat.update")[0].params
    assert f"{update['channel']}:{update['ts']}" == ref and update["text"] == "*Approved*" and update["blocks"] == []
    assert await channel.send(OutboundMessage(chat=chat, kind="typing")) is None
    assert await channel.send(OutboundMessage(chat=chat, text="   ")) is None
    assert [c.method for c in fake.calls] == ["chat.postMessage", "chat.update"]


async def test_missing_or_refused_secrets_are_configuration_errors(
    fake: FakeSlack, make_settings: Callable[..., Settings]
) -> None:
    base = make_settings().channels.slack
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        SlackChannel(base)
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN"):
        SlackChannel(base.model_copy(update={"bot_token": BOT_TOKEN}))
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        SlackChannel(base.model_copy(update={"bot_token": BOT_TOKEN, "mode": "http"}))
    cfg = base.model_copy(update={"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base": fake.base_url})
    fake.fail("auth.test", status=200, error="invalid_auth")
    with pytest.raises(ConfigError, match="bot_token was refused by Slack") as refused:
        await SlackChannel(cfg).start(RecordingInbox())
    fake.fail("apps.connections.open", status=200, error="invalid_auth")
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN") as refused_app:
        await SlackChannel(cfg).start(RecordingInbox())
    for error in (refused, refused_app):
        assert BOT_TOKEN not in str(error.value) and APP_TOKEN not in str(error.value)


async def test_network_errors_are_retried_then_reported(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "NETWORK_BACKOFF_S", (0.0, 0.0, 0.0))
    server = FakeSlack()  # a port that was served a moment ago: connections are refused now
    await server.start()
    dead = server.base_url
    await server.stop()
    cfg = make_settings().channels.slack.model_copy(
        update={"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base": dead}
    )
    channel = SlackChannel(cfg)
    with pytest.raises(SlackDeliveryError, match="chat.postMessage failed: network error") as failed:
        await channel.send(OutboundMessage(chat=ChatKey(channel="slack", chat_id="C1"), text="hello"))
    assert BOT_TOKEN not in str(failed.value)


def test_inbound_mapping() -> None:
    me = BotIdentity(user_id="UBOT", bot_id="BBOT")
    files = [{"id": "F1", "name": "cat.png", "mimetype": "image/png", "size": 10}, {"id": "F2", "name": "a.pdf"}]
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": "G1",
        "channel_type": "mpim",
        "user": "U1",
        "ts": "1.2",
        "text": "<@UBOT> see <@U2|bob> in <#C9|general>, <!here> &lt;3 <mailto:a@b.c|a@b.c>",
        "files": files,
    }
    post = post_from_event(event, me)
    assert post is not None and not post.direct and post.mentioned
    message = inbound_message(post, me, sender_name="Ann", in_bot_thread=False, reply_in_thread=True)
    assert message.id == "G1:1.2" and message.chat == ChatKey(channel="slack", chat_id="G1", thread_id="1.2")
    assert message.text == "see @bob in #general, @here <3 a@b.c" and message.mentions_bot
    assert [(a.kind, a.name, a.ref) for a in message.attachments] == [
        ("image", "cat.png", "F1"),
        ("file", "a.pdf", "F2"),
    ]
    broadcast = post_from_event({**event, "subtype": "thread_broadcast", "thread_ts": "1.1", "text": "hi"}, me)
    assert broadcast is not None and not broadcast.mentioned
    reply = inbound_message(broadcast, me, sender_name="", in_bot_thread=True, reply_in_thread=True)
    assert reply.chat.thread_id == "1.1" and reply.reply_to == "G1:1.1" and reply.mentions_bot
    assert post_from_event({**event, "subtype": "message_replied"}, me) is None
    assert chat_key(post, reply_in_thread=False).thread_id is None


# -- the slash command and Socket Mode ----------------------------------------------------------------------------


async def test_slash_command_runs_our_command(make_slack: Any, fake: FakeSlack) -> None:
    fake.names["U1"] = "Ann"
    h = await make_slack()
    fields = {
        "token": "legacy",
        "team_id": "T1",
        "channel_id": "C1",
        "channel_name": "general",
        "user_id": "U1",
        "user_name": "ann",
        "command": "/bot",
        "text": "help",
        "response_url": fake.response_url("cmd"),
        "trigger_id": "trigger-cmd-1",
        "api_app_id": "A1",
    }
    status, body = await h.form(fields)
    assert status == 200 and json.loads(body) == {"response_type": "in_channel"}
    posts = await fake.wait_for(lambda: fake.posts())
    await h.settle()
    assert posts[0]["channel"] == "C1" and "thread_ts" not in posts[0]
    assert posts[0]["text"].startswith("Commands:") and "/bot reset" in posts[0]["text"]  # as Slack needs them
    await h.form({**fields, "text": "whoami", "trigger_id": "trigger-cmd-2"})
    await fake.wait_for(lambda: len(fake.posts()) == 2)
    assert fake.posts()[1]["text"] == "You are U1 (ann), user, in chat slack:C1."
    # In a channel the bot is not a member of, the answer goes to the person who ran the command.
    fake.fail("chat.postMessage", status=200, error="not_in_channel")
    await h.form({**fields, "text": "whoami", "trigger_id": "trigger-cmd-3"})
    answer = await fake.wait_for(lambda: fake.calls_to("response_url:cmd"))
    await h.settle()
    assert answer[0].params == {"text": "You are U1 (ann), user, in chat slack:C1.", "response_type": "ephemeral"}


async def test_socket_mode_connects_and_answers(
    fake: FakeSlack, make_settings: Callable[..., Settings], scripted: Any
) -> None:
    section = {
        "enabled": True,
        "mode": "socket",
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "api_base": fake.base_url,
        "allow_from": ["U1"],
        "typing_reaction": "",
    }
    settings = make_settings(channels={"slack": section}, routing={"strategy": "rule"})
    channel = SlackChannel(settings.channels.slack)
    gateway = Gateway(settings, model=scripted("Over the socket."), channels=[channel], tools=[])
    await gateway.start()
    try:
        assert gateway.http is None, "Socket Mode needs no HTTP server"
        opened = fake.calls_to("apps.connections.open")
        assert len(opened) == 1 and opened[0].token == APP_TOKEN
        event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "ts": "1600000000.000009", "channel": "C1"}
        body = {"team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": "EvS1", "event": event}
        envelope = await fake.push(body)
        assert (await fake.wait_ack(envelope))["envelope_id"] == envelope
        again = await fake.push(body, retry_attempt=1)
        await fake.wait_ack(again)
        posts = await fake.wait_for(lambda: fake.posts())
        await channel.settled()
        await gateway.bus.join()
        assert texts(fake.posts()) == ["Over the socket."] and posts[0]["thread_ts"] == "1600000000.000009"
        assert len(fake.calls_to("auth.test")) == 1
    finally:
        await gateway.stop(timeout=5)
    assert fake.calls_to("socket:connected")


async def test_a_streamed_answer_is_one_message_updated_until_it_is_whole(make_slack: Any, fake: FakeSlack) -> None:
    from agents.models.scripted import Streamed

    whole = "First part, second part, and the end."

    async def shown(k: int) -> None:  # the next piece once the text so far is on the screen (no race with time)
        await fake.wait_for(lambda: len(fake.calls_to("chat.postMessage")) + len(fake.calls_to("chat.update")) >= k)

    h = await make_slack(Streamed(("First part, ", "second part, ", "and the end."), gate=shown))
    await h.message("@chat tell me")
    await fake.wait_for(lambda: any(c.params.get("text") == whole for c in fake.calls_to("chat.update")), CEILING_S)
    await h.settle()
    posts = fake.posts()
    assert len(posts) == 1 and "…" in posts[0]["text"], "one message, shown while it was written"
    assert len(fake.calls_to("chat.update")) >= 2, "updated as it grew"
    assert [m["text"] for m in fake.messages.values()] == [whole], "and it ends as exactly the answer"
