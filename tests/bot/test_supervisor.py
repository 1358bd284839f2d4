"""Console-shaped chat → bus → supervisor → Chat → store → channel, with the scripted model."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agents.messages import Message
from agents.models.base import ModelError, ModelTimeout
from bot.clock import FakeClock
from bot.runs.manager import TYPING_AFTER_S
from tests.waiting import eventually


async def test_message_routed_to_chat_and_stored(make_harness, scripted) -> None:
    model = scripted("Hello there!", "Second answer")
    h = await make_harness(model)
    assert await h.say("hi") == ["Hello there!"]
    assert await h.say("again") == ["Second answer"]
    # The second request carries the first exchange as history.
    second = model.requests[1]
    assert [(m.role, m.text) for m in second.messages] == [
        ("user", "hi"),
        ("assistant", "Hello there!"),
        ("user", "again"),
    ]
    stored = await h.gateway.store.history(str(h.chat()))
    assert [m.text for m in stored] == ["hi", "Hello there!", "again", "Second answer"]


async def test_typing_shows_only_when_the_answer_takes_a_while(make_harness, scripted) -> None:
    clock = FakeClock()
    release = asyncio.Event()

    async def slow(_request: Any) -> str:
        await release.wait()
        return "thought it over"

    h = await make_harness(scripted("quick", slow), clock=clock)
    assert await h.say("hi") == ["quick"]
    assert [m.kind for m in h.channel.sent] == ["text"], "a quick answer needs no typing indicator"
    h.channel.sent.clear()
    began = clock.monotonic()
    answer = asyncio.create_task(h.say("think hard"))

    async def typing_shown() -> bool:
        await clock.advance(0.25)
        return any(m.kind == "typing" for m in h.channel.sent)

    await eventually(typing_shown, what="the typing indicator of a slow answer")
    assert clock.monotonic() - began >= TYPING_AFTER_S, "not before the delay"
    release.set()
    assert await answer == ["thought it over"]
    assert [m.kind for m in h.channel.sent] == ["typing", "text"]


async def test_duplicate_message_id_answered_once(make_harness, scripted) -> None:
    h = await make_harness(scripted("only once"))
    assert await h.say("hi", id="42") == ["only once"]
    assert await h.say("hi", id="42") == []


async def test_unknown_sender_refused_with_their_id(make_harness, scripted) -> None:
    h = await make_harness(scripted(), allow=["friend"], admins=[])
    replies = await h.say("hi", user="stranger")
    assert len(replies) == 1 and "stranger" in replies[0] and "allow_from" in replies[0]
    assert await h.gateway.store.history(str(h.chat())) == []


async def test_unknown_sender_ignored_when_configured(make_harness, scripted) -> None:
    h = await make_harness(scripted(), allow=["friend"], admins=[], channels={"console": {"unknown_senders": "ignore"}})
    assert await h.say("hi", user="stranger") == []


async def test_group_message_without_mention_ignored(make_harness, scripted) -> None:
    h = await make_harness(scripted("answer"))
    assert await h.say("chatter", is_direct=False, mentions_bot=False) == []
    assert await h.say("@bot question", is_direct=False, mentions_bot=True) == ["answer"]


async def test_group_mention_policy_all(make_harness, scripted) -> None:
    h = await make_harness(scripted("answer"), mention_policy="all")
    assert await h.say("chatter", is_direct=False, mentions_bot=False) == ["answer"]


async def test_commands(make_harness, scripted) -> None:
    h = await make_harness(scripted("first"))
    start = await h.say("/start")
    assert "/help" in start[0]
    help_text = (await h.say("/help"))[0]
    assert "/whoami" in help_text and "/reset" in help_text
    assert (await h.say("/whoami", user="admin"))[0].startswith("You are admin (admin), admin,")
    assert "user" in (await h.say("/whoami@bot"))[0]
    assert "Unknown command /nope" in (await h.say("/nope"))[0]
    await h.say("remember me")
    assert len(await h.gateway.store.history(str(h.chat()))) == 2
    assert "cleared" in (await h.say("/reset"))[0]
    assert await h.gateway.store.history(str(h.chat())) == []


async def test_command_for_another_bot_is_plain_text(make_harness, scripted) -> None:
    h = await make_harness(scripted("plain"))
    assert await h.say("/help@otherbot") == ["plain"]


async def test_model_error_reported_and_message_kept(make_harness, scripted, caplog) -> None:
    h = await make_harness(scripted(ModelTimeout("the model did not answer in 60 s"), "recovered"))
    with caplog.at_level(logging.WARNING):
        replies = await h.say("are you there?")
    assert len(replies) == 1 and "did not answer" in replies[0] and "saved" in replies[0]
    assert any("console:c1" in r.getMessage() for r in caplog.records)
    stored = await h.gateway.store.history(str(h.chat()))
    assert [m.text for m in stored] == ["are you there?"]
    # The next turn still sees the unanswered message.
    assert await h.say("hello?") == ["recovered"]


async def test_model_error_is_a_model_error(make_harness, scripted) -> None:
    h = await make_harness(scripted(ModelError("quota exceeded")))
    replies = await h.say("hi")
    assert "quota exceeded" in replies[0]


async def test_chats_are_isolated(make_harness, scripted) -> None:
    model = scripted("to a", "to b")
    h = await make_harness(model)
    await h.say("in a", chat=h.chat("a"))
    await h.say("in b", chat=h.chat("b"))
    assert [m.text for m in model.requests[1].messages] == ["in b"]
    assert [m.text for m in await h.gateway.store.history("console:a")] == ["in a", "to a"]


async def test_history_respects_context_budget(make_harness, scripted) -> None:
    model = scripted("one", "two", "three")
    h = await make_harness(model, store={"context_chars": 110})
    await h.say("x" * 100)
    await h.say("y" * 10)
    await h.say("z" * 10)
    sent = model.requests[2].messages
    assert sent[0].role == "user" and all("x" not in (m.text or "") for m in sent)
    assert sent[-1] == Message.user("z" * 10)


async def test_the_outbox_keeps_only_what_is_not_sent_yet(make_harness, scripted) -> None:
    h = await make_harness(scripted("one", "two", "three"))
    for text in ("a", "b", "c"):
        await h.say(text)
    await h.gateway.store.flush()
    # Each reply passed through the outbox (committed before it was sent) and left it once sent.
    assert await h.gateway.store.read("SELECT count(*) FROM outbox") == [(0,)]
