"""The offline model demonstrates the product end to end (no key): the time in a city, a reminder, a file
written after confirmation, a three-step plan to approve, a question back, a handoff to a file agent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.models.offline_intents import TRY
from bot.clock import FakeClock
from tests.waiting import eventually

LABEL = "[offline model]"


async def start(make_harness: Any, **overrides: Any) -> Any:
    return await make_harness(
        None, routing={"strategy": "hybrid"}, channels={"console": {"streaming": False}}, **overrides
    )


async def test_the_time_in_a_city_and_a_reminder_marked_once(make_harness: Any) -> None:
    clock = FakeClock()
    h = await start(make_harness, clock=clock)
    [answer] = await h.say("what time is it in Tokyo?")
    assert answer.startswith(LABEL) and "Asia/Tokyo" in answer
    [scheduled] = await h.say("remind me in 2 minutes to stretch")
    assert scheduled.startswith(LABEL) and "scheduled" in scheduled
    [pending] = await h.gateway.scheduled.pending(str(h.chat()))
    assert pending["text"] == "Reminder: stretch"
    await clock.advance(121)
    await eventually(lambda: "⏰ Reminder: stretch" in h.channel.texts(), what="the reminder, one ⏰")
    assert not any("⏰ ⏰" in text for text in h.channel.texts())


async def test_every_suggestion_of_the_offline_model_works_as_typed(make_harness: Any) -> None:
    h = await start(make_harness)
    suggestions = re.findall(r'"([^"]+)"', TRY)
    assert "@react help me choose a laptop" in suggestions
    for text in suggestions:
        sent = await h.say(text)
        assert sent and not any("only understand a few requests" in t for t in sent), (text, sent)
        if h.gateway.runs is not None and await h.gateway.runs.pending(str(h.chat())):
            await h.say("/cancel")
    # Asked of the chat agent (no tool to ask back with), it says how instead of refusing.
    [answer] = await h.say("help me choose a phone")
    assert "@react help me choose a phone" in answer and "only understand" not in answer


async def test_writing_a_file_asks_first_and_then_writes(make_harness: Any) -> None:
    h = await start(make_harness)
    workspace = Path(h.gateway.settings.tools.workspace)
    sent = await h.say("write hello to notes.txt")
    assert any("write_file" in t for t in sent), sent
    assert not (workspace / "notes.txt").exists(), "nothing before the approval"
    done = await h.click("Approve")
    assert (workspace / "notes.txt").read_text() == "hello\n"
    assert any(t.startswith(LABEL) for t in done)


async def test_a_plan_of_three_steps_is_approved_and_carried_out(make_harness: Any) -> None:
    h = await start(make_harness)
    sent = await h.say("plan a weekend trip to Paris")
    plan = h.prompt().text
    assert plan.count("\n") >= 3 and "a weekend trip to Paris" in plan and "\\n" not in plan, plan
    done = await h.click("Approve")
    assert any(t.startswith(LABEL) and "The plan for a weekend trip to Paris is done" in t for t in done), done
    assert sent


async def test_an_edited_plan_keeps_the_edit_in_its_summary(make_harness: Any) -> None:
    h = await start(make_harness)
    await h.say("plan a weekend trip to Paris")
    await h.click("Edit")
    await h.say("stay in cheap hotels: under 100 euros")
    assert "Take this into account: stay in cheap hotels: under 100 euros" in h.prompt().text
    done = await h.click("Approve")
    summary = next(t for t in done if "The plan for a weekend trip to Paris is done" in t)
    assert "• Take this into account: stay in cheap hotels: under 100 euros" in summary, summary


async def test_help_me_choose_asks_back(make_harness: Any) -> None:
    h = await start(make_harness)
    await h.say("@react help me choose a laptop")
    assert "what matters most to you" in h.prompt().text
    done = await h.click("Price")
    assert any(t.startswith(LABEL) and "Price" in t for t in done), done


async def test_a_request_matching_a_file_agent_goes_to_it(make_harness: Any, tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "cook.md").write_text(
        "---\nkind: agent\nname: cook\nrunner: chat\ndescription: Recipes and cooking advice.\n"
        "triggers: {keywords: [recipe, cook, bake], priority: 100}\n---\nYou help in the kitchen.\n"
    )
    h = await start(make_harness, agents={"dirs": [str(agents)]})
    notice, answer = await h.say("a recipe to bake pancakes please")
    history = await h.gateway.store.history(str(h.chat()))
    assert notice == "🤖 Auto-routing to: cook (matched: bake, recipe)", "a file agent taking a message says so"
    assert answer.startswith(LABEL) and history[-1].agent == "cook"


async def test_anything_else_says_what_to_try(make_harness: Any) -> None:
    h = await start(make_harness)
    [answer] = await h.say("@chat why is the sky blue?")
    assert answer.startswith(LABEL) and "what time is it in Tokyo" in answer
