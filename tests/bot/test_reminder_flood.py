"""A model that loops on ``schedule_message`` cannot flood a chat: pending messages are capped per chat and per
person (in the insert itself), and ``/pending`` lists them a page at a time."""

from __future__ import annotations

from typing import Any

from agents.models.scripted import ScriptedModel, calls
from bot.clock import FakeClock


def flood(n: int, start: int = 0) -> Any:
    return calls(
        *[("schedule_message", {"text": f"ping {i}", "in_minutes": 60 + i}, f"s{i}") for i in range(start, start + n)]
    )


async def test_a_chat_holds_at_most_its_cap_and_pending_is_paged(make_harness: Any) -> None:
    model = ScriptedModel([flood(60), "Scheduled what I could."])
    h = await make_harness(model, clock=FakeClock())
    await h.say("@react remind me sixty times")
    results = model.requests[1].messages[-1].tool_results
    assert sum(r.content.startswith("scheduled ") for r in results) == 50
    refused = [r.content for r in results if not r.content.startswith("scheduled ")]
    assert len(refused) == 10 and all("jobs.max_reminders_per_chat" in text for text in refused)
    assert len(await h.gateway.scheduled.pending(str(h.chat()))) == 50

    [first] = await h.say("/pending")
    assert first.count("• scheduled") == 20 and len(first) < 4000
    assert first.endswith("Page 1 of 3 (50 scheduled messages, /pending 2 for the next).")
    [last] = await h.say("/pending 3")
    assert last.count("• scheduled") == 10 and "ping 49" in last and "Page 3 of 3" in last
    assert (await h.say("/pending 9")) == ["There are 3 pages of pending messages here; /pending 3."]
    assert (await h.say("/pending x")) == ["Usage: /pending [PAGE]"]
    model.assert_complete()


async def test_one_person_is_capped_over_all_chats(make_harness: Any) -> None:
    model = ScriptedModel([flood(3), "ok", flood(3, start=3), "ok"])
    h = await make_harness(model, clock=FakeClock(), jobs={"max_reminders_per_user": 4})
    await h.say("@react remind me thrice")
    await h.say("@react remind me thrice more", chat=h.chat("other"))
    results = model.requests[3].messages[-1].tool_results
    assert [r.content.startswith("scheduled ") for r in results] == [True, False, False]
    assert "jobs.max_reminders_per_user" in results[1].content
    assert len(await h.gateway.scheduled.pending()) == 4
    model.assert_complete()
