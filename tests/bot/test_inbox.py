"""The durable intake: stored before acknowledged, handled once, fair between chats and senders, bounded per message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from bot.events import InboundMessage
from bot.inbox import InboxClosed, Receipt
from tests.waiting import CEILING_S

pytestmark = pytest.mark.timeout(60)


async def _rows(h: Any, status: str | None = None) -> list[tuple[str, str]]:
    await h.gateway.store.flush()
    sql = "SELECT event_key, status FROM inbox"
    rows = await h.gateway.store.read(sql + " ORDER BY seq")
    return [(k, s) for k, s in rows if status is None or s == status]


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def test_an_event_is_stored_before_it_is_acknowledged_and_handled_once(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo]))
    message = h.message("hello", id="u-1")
    assert await h.gateway.inbox.submit(message) is Receipt.ACCEPTED
    await h.gateway.bus.join()
    assert h.channel.texts() == ["echo: hello"]
    # The platform delivers it again (its acknowledgement was lost): stored once, answered once.
    assert await h.gateway.inbox.submit(message) is Receipt.DUPLICATE
    assert await h.send(message) == []
    assert await _rows(h) == [("console:u-1", "done")]


async def test_events_stored_before_a_crash_are_answered_once_in_order_after_restart(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo, echo, echo]))
    store = h.gateway.store
    # What a crash right after the commit leaves: stored (acknowledged to the platform), never handled.
    events = [h.message(f"m{i}", id=f"lost-{i}", chat=h.chat("a" if i % 2 else "b")) for i in range(3)]
    steps = [store.receive_step(f"console:{e.id}", str(e.chat), "message", e.model_dump_json()) for e in events]
    assert await store.receive(steps) == [True, True, True]
    await h.restart(ScriptedModel([echo, echo, echo]))
    assert h.gateway.recovery is not None and h.gateway.recovery.inbox == 3
    await h.gateway.settled()
    assert sorted(h.channel.texts()) == ["echo: m0", "echo: m1", "echo: m2"]
    assert [m.text for m in await h.gateway.store.history(str(h.chat("b")))] == ["m0", "echo: m0", "m2", "echo: m2"]
    assert await _rows(h, "pending") == []
    await h.restart(ScriptedModel([]))  # nothing is handled twice
    assert h.gateway.recovery is not None and h.gateway.recovery.inbox == 0


async def test_a_closed_inbox_takes_nothing(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]))
    await h.gateway.inbox.close()
    with pytest.raises(InboxClosed):
        await h.gateway.inbox.submit(h.message("late"))
    assert await _rows(h) == []


async def test_unknown_senders_get_one_reply_an_hour_and_cost_no_write(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), allow=["u1"])
    first = await h.say("hi", user="stranger")
    assert len(first) == 1 and "Your user id is stranger" in first[0]
    for _ in range(5):
        assert await h.say("hi again", user="stranger") == []
    assert await _rows(h) == []
    assert h.gateway.inbox.stats.refused["unknown_sender"] == 6
    # In a group, chatter that does not address the bot gets nothing at all.
    assert await h.say("chatter", user="other", is_direct=False) == []


async def test_an_over_limit_sender_is_told_once_then_dropped_silently(make_harness: Any) -> None:
    h = await make_harness(
        ScriptedModel([echo] * 6),
        admins=["boss"],
        limits={"sender_rate_per_min": 1, "sender_burst": 2},
    )
    assert await h.say("one") == ["echo: one"]
    assert await h.say("two") == ["echo: two"]
    told = await h.say("three")
    assert len(told) == 1 and "faster than I can take them" in told[0]
    assert await h.say("four") == []
    assert [k for k, _ in await _rows(h)] == ["console:m1", "console:m2"]
    # Another sender, and an admin, are not held back by it.
    assert await h.say("mine", user="u2") == ["echo: mine"]
    for i in range(3):
        assert await h.say(f"boss {i}", user="boss") == [f"echo: boss {i}"]


async def test_a_message_over_the_text_limit_gets_a_clear_notice_and_is_not_stored(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), limits={"max_text_chars": 1000})
    replies = await h.say("x" * 5000)
    assert len(replies) == 1 and "too long (5,000 characters" in replies[0] and "1,000" in replies[0]
    assert await _rows(h) == []


async def test_invalid_unicode_is_repaired_and_answered(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo]))
    assert await h.say("broken \ud800 text") == ["echo: broken \ufffd text"]


async def test_a_long_message_is_routed_on_its_prefix_and_reaches_the_agent_whole(make_harness: Any) -> None:
    seen: list[str] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request.messages[-1].text or "")
        return "read it"

    h = await make_harness(ScriptedModel([answer]), limits={"route_chars": 200})
    text = "hello there. " + "a" * 5000 + " run `uptime` and fetch https://example.org"
    assert await h.say(text) == ["read it"]
    assert seen == [text]
    events = await h.gateway.tracing.runs(str(h.chat()), 1)
    route = next(e for e in events[0] if e.type == "route")
    assert route.agent == "chat"  # the tool words past the prefix were not read


async def test_a_flooding_chat_is_bounded_and_never_stalls_another(make_harness: Any) -> None:
    release = asyncio.Event()

    async def answer(request: ModelRequest) -> str:
        if request.messages[-1].text == "hello?":
            return "quick"
        await release.wait()
        return "slow answer"

    h = await make_harness(
        ScriptedModel([answer] * 6),
        limits={"chat_queue_notice": 3, "chat_queue_max": 5, "sender_rate_per_min": 0},
    )
    flood = h.chat("flood")
    receipts = [await h.gateway.inbox.submit(h.message(f"f{i}", chat=flood)) for i in range(12)]
    assert receipts[:5] == [Receipt.ACCEPTED] * 5  # five waiting (the first one running)
    assert set(receipts[5:]) == {Receipt.REFUSED}
    # Another chat is answered while the flooding chat's first run still waits.
    calm = h.chat("calm")
    await h.gateway.inbox.submit(h.message("hello?", chat=calm))
    async with h.channel.received:
        await asyncio.wait_for(h.channel.received.wait_for(lambda: h.channel.texts(calm) == ["quick"]), CEILING_S)
    await h.gateway.inbox.settled()
    notices = h.channel.texts(flood)
    assert sum("Slow down" in t for t in notices) == 1
    assert sum("did not take your latest one" in t for t in notices) == 1
    # A command still gets through the full chat.
    assert await h.gateway.inbox.submit(h.message("/whoami", chat=flood)) is Receipt.ACCEPTED
    release.set()
    await h.gateway.settled()
    assert h.channel.texts(flood).count("slow answer") == 5
    assert any("Your id" in t or "console" in t for t in h.channel.texts(flood)[-1:])


async def test_button_presses_of_strangers_are_ignored_without_a_write(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), allow=["u1"])
    assert await h.gateway.inbox.submit(h.press("v1:abcdef:1234:a", user="stranger")) is Receipt.IGNORED
    assert await _rows(h) == []


def test_inbound_text_is_valid_unicode_whatever_the_platform_sent() -> None:
    from bot.events import ChatKey, Sender

    event = InboundMessage(
        id="1\ud800", chat=ChatKey(channel="x", chat_id="y"), sender=Sender(id="u", name="n\udfff"), text="a\ud800"
    )
    assert event.text == "a\ufffd" and event.sender.name == "n\ufffd" and event.id == "1\ufffd"
    event.model_dump_json().encode("utf-8")
