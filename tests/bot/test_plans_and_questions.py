"""Plans, questions and scheduled messages through the gateway (step 8)."""

from __future__ import annotations

import json
from typing import Any

from agents.models.base import ModelResponse
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import Tool, tool
from bot.clock import FakeClock
from tests.helpers.plans import plan, respond
from tests.waiting import eventually


def replan(*steps: str) -> ModelResponse:
    data = {"action": "plan", "steps": list(steps)}
    return ModelResponse(text=json.dumps(data), parsed=data)


async def test_plan_approve_progress_replan_respond(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            plan("Pick a date", "Book a venue"),
            "Friday",
            replan("Book a venue"),
            "Booked Hall A",
            respond("Offsite: Friday at Hall A."),
        ]
    )
    h = await make_harness(model)
    out = await h.say("@plan Plan my team offsite")
    assert "📋 Plan (v1):\n1. Pick a date\n2. Book a venue" in out[0]
    assert [b.label for b in h.prompt().buttons[0]] == ["✅ Approve", "✏️ Edit", "❌ Reject"]
    after = await h.click("Approve")
    assert after[-1] == "Offsite: Friday at Hall A."
    assert "✅ Step 1/2: Pick a date" in after and "✅ Step 2/2: Book a venue" in after
    history = await h.gateway.store.history(str(h.chat()))
    assert history[-1].text == "Offsite: Friday at Hall A." and history[-1].agent == "plan"
    model.assert_complete()


async def test_text_feedback_revises_and_old_version_press_refused(make_harness: Any) -> None:
    model = ScriptedModel([plan("A"), plan("A", "B")])
    h = await make_harness(model)
    await h.say("@plan do a thing")
    old_approve = h.payload("Approve")
    out = await h.say("please add a step B")
    assert "📋 Plan (v2)" in out[-1] and "2. B" in out[-1]
    assert await h.send(h.press(old_approve)) == ["This request is no longer pending."]
    end = await h.click("Reject")
    assert "rejected" in end[-1]
    model.assert_complete()


async def test_edit_button_asks_for_feedback(make_harness: Any) -> None:
    model = ScriptedModel([plan("A"), plan("C")])
    h = await make_harness(model)
    await h.say("@plan do a thing")
    asked = await h.click("Edit")
    assert "What should I change" in asked[-1]
    revised = await h.say("do C instead")
    assert "1. C" in revised[-1]
    await h.say("/cancel")
    model.assert_complete()


async def test_plan_approval_by_chinese_yes(make_harness: Any) -> None:
    model = ScriptedModel([plan("一"), "完成", respond("好了")])
    h = await make_harness(model)
    await h.say("@plan 帮我规划")
    assert (await h.say("同意"))[-1] == "好了"
    model.assert_complete()


async def test_tool_confirm_inside_a_plan_step(make_harness: Any) -> None:
    ran: list[str] = []

    @tool(risk="medium", confirm=True)
    async def deploy(env: str) -> str:
        """Deploy."""
        ran.append(env)
        return f"deployed {env}"

    model = ScriptedModel([plan("Deploy staging"), call("deploy", {"env": "staging"}, id="d1"), "up", respond("Done.")])
    h = await make_harness(model, tools=[deploy], plan={"approval": "never"})
    out = await h.say("@plan deploy it")
    assert 'deploy(env="staging")' in out[-1] and ran == []
    assert (await h.click("Approve"))[-1] == "Done."
    assert ran == ["staging"]
    model.assert_complete()


async def test_ask_user_by_text_and_by_button(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("ask_user", {"question": "Which city?", "choices": ["Paris", "Rome"]}, id="q1"),
            "Rome, lovely.",
            call("ask_user", {"question": "How many nights?"}, id="q2"),
            "Three nights it is.",
        ]
    )
    h = await make_harness(model)
    out = await h.say("@react plan a city trip")
    assert out[-1].startswith("❓ Which city?") and [b.label for b in h.prompt().buttons[0]] == ["Paris", "Rome"]
    assert (await h.click("Rome"))[-1] == "Rome, lovely."
    assert model.requests[1].messages[-1].tool_results[0].content == "Rome"
    out = await h.say("@react and how long?")
    assert "How many nights?" in out[-1]
    assert (await h.say("three"))[-1] == "Three nights it is."
    assert model.requests[3].messages[-1].tool_results[0].content == "three"
    model.assert_complete()


async def test_scheduled_message_listed_cancelled_and_fired_after_restart(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("schedule_message", {"text": "send the report", "in_minutes": 5}, id="s1"),
            "I'll remind you.",
            call("schedule_message", {"text": "later", "in_minutes": 600}, id="s2"),
            "Scheduled.",
        ]
    )
    clock = FakeClock()
    h = await make_harness(model, clock=clock)
    await h.say("@react remind me in a moment to send the report")
    await h.say("@react remind me in ten hours")
    pending = (await h.say("/pending"))[0]
    assert "later" in pending
    later_id = next(line for line in pending.splitlines() if "later" in line).split("scheduled ")[1].split()[0]
    # The gateway is down when the first one falls due: it is sent at the next start, marked late.
    tools: list[Tool] = []
    await h.restart(ScriptedModel([]), tools, down=lambda: clock.advance(6 * 60))
    assert h.gateway.recovery is not None and h.gateway.recovery.late_scheduled == 1
    fired = [t for t in h.channel.texts() if t.startswith("⏰ send the report")]
    assert len(fired) == 1 and "offline" in fired[0]
    assert f"Scheduled message {later_id} cancelled" in (await h.say(f"/cancel {later_id}"))[0]
    assert "Nothing is pending" in (await h.say("/pending"))[0]
    assert await h.gateway.scheduled.pending() == []
    model.assert_complete()


async def test_scheduled_message_fires_while_running(make_harness: Any) -> None:
    model = ScriptedModel([call("schedule_message", {"text": "stand up", "in_minutes": 10}, id="s1"), "ok"])
    clock = FakeClock()
    h = await make_harness(model, clock=clock)
    await h.say("@react remind me to stand up")
    await clock.advance(9 * 60)
    assert "⏰ stand up" not in h.channel.texts()
    await clock.advance(60)
    await eventually(lambda: "⏰ stand up" in h.channel.texts(), what="the reminder")
    await clock.advance(3600)
    await h.gateway.settled()
    assert h.channel.texts().count("⏰ stand up") == 1
    model.assert_complete()


async def test_schedule_in_the_past_is_a_tool_error(make_harness: Any) -> None:
    # A separate gateway: two harnesses on one data dir would share inbound message ids.
    bad = ScriptedModel([call("schedule_message", {"text": "x", "at": "2001-01-01T00:00:00Z"}, id="s2"), "sorry"])
    h2 = await make_harness(bad)
    assert (await h2.say("@react remind me in the past"))[-1] == "sorry"
    assert "in the past" in bad.requests[1].messages[-1].tool_results[0].content
    assert await h2.gateway.scheduled.pending() == []
    bad.assert_complete()
