"""Faults are not floods: what the rate limit does with messages the database could not store (a full disk).

The real gateway (console channel stand-in) on a real SQLite database made full at the SQLite seam
(:class:`~tests.store.full_disk.FullDisk`), with a fake clock so the token bucket refills only when a test says.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.clock import FakeClock
from bot.gateway.supervisor import DELAYED, RETRY_CAP_S
from bot.inbox import NotStored
from bot.store.retry import DELAYED as MANAGER_DELAYED
from tests.store.full_disk import FullDisk
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(60)

TOO_FAST = "faster than I can take them"
LIMITS = {"sender_rate_per_min": 1, "sender_burst": 2}
"""Two messages at once, then one a minute (the fake clock stands still: no refill)."""


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def full_disk(h: Any) -> FullDisk:
    disk = FullDisk(h.gateway.store, Path(h.gateway.settings.store.data_dir) / "bot.db")
    await disk.fill()
    return disk


async def test_redeliveries_of_a_message_the_disk_refused_cost_the_sender_nothing(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo] * 2), limits=LIMITS, clock=FakeClock())
    disk = await full_disk(h)
    first = h.message("first", id="m-first")
    for _ in range(10):  # the platform delivers it again and again while the disk is full
        with pytest.raises(NotStored):
            await h.gateway.inbox.submit(first)
    await disk.clear()
    assert await h.send(first) == ["echo: first"]
    assert await h.say("second") == ["echo: second"]  # the burst's second token was still there
    told = await h.say("third")  # and the limit still holds
    assert len(told) == 1 and TOO_FAST in told[0]
    assert h.gateway.inbox.stats.refused == {"rate": 1}


async def test_a_message_the_disk_refused_is_never_refused_as_too_fast_later(make_harness: Any) -> None:
    """It was taken (not refused) when it first came; the platform was never told "received".  Refusing it as
    too fast when it comes again would acknowledge it and drop it without a word."""
    h = await make_harness(ScriptedModel([echo] * 3), limits=LIMITS, clock=FakeClock())
    disk = await full_disk(h)
    early = h.message("early", id="m-early")
    with pytest.raises(NotStored):
        await h.gateway.inbox.submit(early)
    await disk.clear()
    assert await h.say("one") == ["echo: one"]
    assert await h.say("two") == ["echo: two"]  # the bucket is empty now
    assert await h.send(early) == ["echo: early"]
    told = await h.say("three")  # a new message over the limit is refused as before
    assert len(told) == 1 and TOO_FAST in told[0]


async def test_a_stored_message_the_disk_refuses_to_take_is_answered_once_it_clears(make_harness: Any) -> None:
    """Stored (acknowledged) before the disk filled, handled while it is full: the chat's later message waits
    behind it, the person hears once that the answer is delayed, and both are answered once, in order, as soon
    as the disk clears, with no restart."""
    clock = FakeClock()
    h = await make_harness(ScriptedModel([echo] * 2), clock=clock)
    stored = [h.message(f"m{i}", id=f"stored-{i}") for i in range(2)]
    for event in stored:  # stored as the intake stores them (and acknowledged), before the disk fills
        step = h.gateway.store.receive_step(f"console:{event.id}", str(event.chat), "message", event.model_dump_json())
        assert await h.gateway.store.receive([step]) == [True]
    disk = await full_disk(h)
    for event in stored:
        await h.gateway.inbox.publish_stored(event)
    await eventually(lambda: h.channel.texts() == [DELAYED], what="the delayed notice")
    for _ in range(5):  # attempts on the fake clock while the disk is still full: no second notice
        await clock.advance(RETRY_CAP_S)
    assert h.channel.texts() == [DELAYED]
    await disk.clear()
    await clock.advance(RETRY_CAP_S)
    await h.gateway.settled()
    assert h.channel.texts() == [DELAYED, "echo: m0", "echo: m1"]
    rows = await h.gateway.store.read("SELECT event_key, status FROM inbox WHERE event_key LIKE 'console:%'")
    assert sorted(rows) == [("console:stored-0", "done"), ("console:stored-1", "done")]


async def test_a_run_under_way_when_the_disk_fills_answers_once_it_clears(make_harness: Any) -> None:
    """The message was taken; the model is answering when the disk fills: the answer cannot be saved, so it waits
    (the person hears once that it is delayed) and goes out once, as soon as the disk clears, with no restart."""
    clock = FakeClock()
    model_called, go_on = asyncio.Event(), asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        model_called.set()
        await go_on.wait()
        return "echo: " + (request.messages[-1].text or "")

    h = await make_harness(ScriptedModel([slow]), clock=clock)
    answered = asyncio.create_task(h.say("hello"))
    await eventually(model_called.is_set, what="the model answering")
    disk = await full_disk(h)
    go_on.set()
    await eventually(lambda: MANAGER_DELAYED in h.channel.texts(), what="the delayed notice")
    for _ in range(5):  # attempts on the fake clock while the disk is still full: no second notice, no answer
        await clock.advance(RETRY_CAP_S)
    assert h.channel.texts() == [MANAGER_DELAYED]
    await disk.clear()

    async def through() -> bool:
        await clock.advance(RETRY_CAP_S)
        return "echo: hello" in h.channel.texts()

    await eventually(through, what="the answer once the disk cleared")
    assert await answered == [MANAGER_DELAYED, "echo: hello"]
    rows = await h.gateway.store.read("SELECT status FROM runs")
    assert rows == [("done",)]


async def test_a_button_pressed_while_the_disk_is_full_takes_effect_once_it_clears(make_harness: Any) -> None:
    """What the press starts cannot be saved (depending on where the disk ran out: the press, the run's end): the
    person hears once that it waits, and it takes effect once (the tool runs once, the answer goes out once) as
    soon as the disk clears, instead of "please answer again"."""
    ran: list[str] = []

    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str) -> str:
        """Delete a build cache directory."""
        ran.append(path)
        return f"deleted {path}"

    clock = FakeClock()
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}, id="c1"), "Deleted the build cache."])
    h = await make_harness(model, tools=[delete_cache], clock=clock)
    await h.say("@react delete the build cache")
    press = h.press(h.payload("Approve"))  # stored (and acknowledged) before the disk fills, handled while full
    step = h.gateway.store.receive_step(f"console:{press.id}", str(press.chat), "action", press.model_dump_json())
    assert await h.gateway.store.receive([step]) == [True]
    disk = await full_disk(h)
    await h.gateway.inbox.publish_stored(press)
    await eventually(lambda: MANAGER_DELAYED in h.channel.texts(), what="the delayed notice")
    for _ in range(3):
        await clock.advance(RETRY_CAP_S)
    assert h.channel.texts().count(MANAGER_DELAYED) == 1 and "Deleted the build cache." not in h.channel.texts()
    await disk.clear()

    async def through() -> bool:
        await clock.advance(RETRY_CAP_S)
        return "Deleted the build cache." in h.channel.texts()

    await eventually(through, what="the press taking effect")
    await h.gateway.settled()
    assert ran == ["/tmp/build"]
    model.assert_complete()
