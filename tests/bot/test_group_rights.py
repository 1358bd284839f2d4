"""Who may do what in a group: stopping, cancelling or answering a request is its requester's (or an admin's);
what changes the group for everyone (clearing its history with /reset or /new, "always allow") is an admin's."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from tests.conftest import Harness
from tests.waiting import CEILING_S, eventually

ALICE, BOB, BOSS = "alice", "bob", "boss"


def note_tools(notes: list[str]) -> list[Tool]:
    @tool(risk="medium", confirm=True)
    async def write_note(text: str) -> str:
        """Write a note."""
        notes.append(text)
        return "written"

    return [write_note]


async def group_harness(make_harness: Any, model: ScriptedModel, tools: list[Tool]) -> Harness:
    return await make_harness(model, tools=tools, admins=[BOSS], allow=[ALICE, BOB, BOSS], mention_policy="all")


def in_group(h: Harness, text: str, user: str) -> Any:
    return h.message(text, user=user, chat=h.chat("team"), is_direct=False)


async def say(h: Harness, text: str, user: str) -> list[str]:
    return await h.send(in_group(h, text, user))


def slow_crawl(started: asyncio.Event, release: asyncio.Event) -> Tool:
    """A tool that sets ``started`` and runs until ``release`` is set."""

    @tool(risk="low")
    async def crawl(site: str) -> str:
        """Crawl a site (slowly)."""
        started.set()
        await release.wait()
        return "crawled"

    return crawl


async def test_a_member_cannot_stop_anothers_running_request(make_harness: Any) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    crawl = slow_crawl(started, release)
    model = ScriptedModel([call("crawl", {"site": "example.org"}, id="c1"), "Here is the crawl."])
    h = await group_harness(make_harness, model, [crawl])
    await h.gateway.inbox.submit(in_group(h, "@react crawl example.org", ALICE))
    await asyncio.wait_for(started.wait(), CEILING_S)

    refusal = "Only the person who asked (or an admin) can stop this request."
    for n, command in enumerate(("/stop", "/cancel"), 1):
        await h.gateway.inbox.submit(in_group(h, command, BOB))  # urgent: it skips the busy chat's queue
        await eventually(lambda n=n: h.channel.texts().count(refusal) == n, what=f"{command} refused")
    release.set()
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts()[-1] == "Here is the crawl.", "alice gets her answer"
    model.assert_complete()


async def test_the_requester_or_an_admin_stops_a_running_request(make_harness: Any) -> None:
    started, never = asyncio.Event(), asyncio.Event()
    crawl = slow_crawl(started, never)
    model = ScriptedModel([call("crawl", {"site": "a"}, id="c1"), call("crawl", {"site": "b"}, id="c2")])
    h = await group_harness(make_harness, model, [crawl])
    await h.gateway.inbox.submit(in_group(h, "@react crawl a", ALICE))
    await asyncio.wait_for(started.wait(), CEILING_S)
    assert "🚫 Stopped the running request." in await say(h, "/stop", ALICE)
    started.clear()
    await h.gateway.inbox.submit(in_group(h, "@react crawl b", ALICE))
    await asyncio.wait_for(started.wait(), CEILING_S)
    assert "🚫 Stopped the running request." in await say(h, "/cancel", BOSS)
    model.assert_complete()


async def test_reset_and_new_in_a_group_are_an_admins(make_harness: Any) -> None:
    notes: list[str] = []
    model = ScriptedModel([call("write_note", {"text": "a"}, id="w1"), "noted"])
    h = await group_harness(make_harness, model, note_tools(notes))
    await say(h, "@react note a", ALICE)
    chat = str(h.chat("team"))
    assert await h.gateway.runs.pending(chat) is not None

    for command in ("/reset", "/new"):
        [told] = await say(h, command, BOB)
        assert told.startswith("In a group only an admin can"), told
        [told] = await say(h, command, ALICE)
        assert told.startswith("In a group only an admin can"), "her own pending request: /cancel, not /reset"
    assert await h.gateway.runs.pending(chat) is not None, "nobody's confirmation was cancelled"
    history = await h.gateway.store.history(chat)
    assert any("note a" in m.text for m in history), "the group's history is kept"
    assert await say(h, "/cancel", BOB) == ["Only the person who asked (or an admin) can cancel this request."]

    assert "cancelled" in (await say(h, "/reset", BOSS))[-1]
    assert await h.gateway.runs.pending(chat) is None and notes == []
    assert (await h.say("/reset", user=BOB))[-1].startswith("Session cleared"), "his own direct chat is his"


async def test_always_allow_in_a_group_is_an_admins(make_harness: Any) -> None:
    notes: list[str] = []
    model = ScriptedModel([call("write_note", {"text": "a"}, id="w1"), "noted a"])
    h = await group_harness(make_harness, model, note_tools(notes))
    await say(h, "@react note a", ALICE)
    labels = [b.label for row in h.prompt().buttons for b in row]
    assert "Always allow write_note here (admins)" in labels
    chat = h.chat("team")
    told = await h.send(h.press(h.payload("Always allow"), user=ALICE, chat=chat))
    assert told == [
        "In a group only an admin can always allow a tool (it would skip confirmations for everyone); "
        "Approve runs it once."
    ]
    assert notes == [] and await h.gateway.runs.pending(str(chat)) is not None, "still waiting"
    assert (await h.gateway.store.chat_settings(chat.settings_key)).get("grants") is None

    await h.send(h.press(h.payload("Always allow"), user=BOSS, chat=chat))
    assert notes == ["a"]
    assert (await h.gateway.store.chat_settings(chat.settings_key)).get("grants") == ["write_note"]
    model.assert_complete()


async def test_always_allow_in_a_direct_chat_stays_its_persons(make_harness: Any) -> None:
    notes: list[str] = []
    model = ScriptedModel([call("write_note", {"text": "a"}, id="w1"), "noted a"])
    h = await group_harness(make_harness, model, note_tools(notes))
    await h.say("@react note a", user=ALICE)
    labels = [b.label for row in h.prompt().buttons for b in row]
    assert "Always allow write_note here" in labels
    await h.click("Always allow", user=ALICE)
    assert notes == ["a"]
    assert (await h.gateway.store.chat_settings(h.chat().settings_key)).get("grants") == ["write_note"]


async def test_a_scheduled_message_is_cancelled_by_who_scheduled_it_or_an_admin(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("schedule_message", {"text": "stand-up", "in_minutes": 30}, id="s1"),
            "Will do.",
            call("schedule_message", {"text": "retro", "in_minutes": 60}, id="s2"),
            "Will do.",
        ]
    )
    h = await group_harness(make_harness, model, [])
    await say(h, "@react remind us of the stand-up", ALICE)
    await say(h, "@react remind us of the retro", ALICE)
    stand_up, retro = [r["id"] for r in await h.gateway.scheduled.pending(str(h.chat("team")))]
    [told] = await say(h, f"/cancel {stand_up}", BOB)
    assert "of yours" in told and len(await h.gateway.scheduled.pending()) == 2
    assert await say(h, f"/cancel {stand_up}", ALICE) == [f"Scheduled message {stand_up} cancelled."]
    assert await say(h, f"/cancel {retro}", BOSS) == [f"Scheduled message {retro} cancelled."]
    model.assert_complete()
