"""Plan-Execute-Replan at the runner level: plan, approval, steps, replan, respond; edit; reject; cap; repair."""

from __future__ import annotations

import json
from typing import Any

from agents.approval import approval_required
from agents.context import RunContext
from agents.messages import Message
from agents.models.base import ModelResponse
from agents.models.scripted import ScriptedModel, call
from agents.plan_execute import PLAN_SCHEMA, REPLAN_SCHEMA, PlanExecuteRunner
from agents.resolutions import Answer, PlanDecision, ToolDecision
from agents.results import FinalAnswer, InterruptRequest
from agents.tools.base import tool
from agents.tools.ledger import MemoryLedger


def plan(*steps: str) -> ModelResponse:
    data = {"steps": list(steps)}
    return ModelResponse(text=json.dumps(data), parsed=data)


def replan(*steps: str) -> ModelResponse:
    data = {"action": "plan", "steps": list(steps)}
    return ModelResponse(text=json.dumps(data), parsed=data)


def respond(answer: str) -> ModelResponse:
    data = {"action": "respond", "answer": answer}
    return ModelResponse(text=json.dumps(data), parsed=data)


def ctx(model: ScriptedModel, tools: list[Any] | None = None, emitted: list[str] | None = None) -> RunContext:
    async def emit(text: str) -> None:
        if emitted is not None:
            emitted.append(text)

    return RunContext(
        chat_key="t:1",
        model=model,
        toolset=approval_required(tools or []),
        ledger=MemoryLedger(),
        run_id="r",
        emit=emit,
    )


async def test_plan_approve_steps_replan_respond() -> None:
    progress: list[str] = []
    model = ScriptedModel(
        [
            plan("Find a venue", "Book it"),
            "Venue: Hall A",
            replan("Book it"),
            "Booked",
            respond("Offsite booked at Hall A."),
        ]
    )
    runner = PlanExecuteRunner()
    paused = await runner.run(ctx(model, emitted=progress), Message.user("Plan my team offsite"))
    assert isinstance(paused, InterruptRequest) and paused.kind == "plan_approval"
    assert "1. Find a venue\n2. Book it" in paused.prompt
    assert [c.value for c in paused.choices] == ["approve", "edit", "reject"]
    assert model.requests[0].response_schema == PLAN_SCHEMA and model.requests[0].tools == ()
    state = json.loads(json.dumps(paused.state))
    done = await runner.resume(ctx(model, emitted=progress), state, PlanDecision(choice="approve"))
    assert isinstance(done, FinalAnswer) and done.text == "Offsite booked at Hall A."
    assert progress == ["✅ Step 1/2: Find a venue", "✅ Step 2/2: Book it"], "approved steps kept: no new prompt"
    assert model.requests[2].response_schema == REPLAN_SCHEMA
    assert "Do this step now: Find a venue" in (model.requests[1].messages[-1].text or "")
    model.assert_complete()


async def test_a_revised_plan_is_approved_again_before_its_new_steps_run() -> None:
    model = ScriptedModel(
        [
            plan("Find a venue", "Book it"),
            "Venue: Hall A",
            replan("Book Hall A", "Wire the deposit"),
            "Booked",
            replan("Wire the deposit"),
            "Wired",
            respond("Booked and paid."),
        ]
    )
    runner = PlanExecuteRunner()
    paused = await runner.run(ctx(model), Message.user("Plan my team offsite"))
    assert isinstance(paused, InterruptRequest)
    revised = await runner.resume(ctx(model), json.loads(json.dumps(paused.state)), PlanDecision(choice="approve"))
    assert isinstance(revised, InterruptRequest) and revised.kind == "plan_approval", "new steps: asked again"
    assert "✓ Find a venue" in revised.prompt and "Revised plan (v2):\n1. Book Hall A\n2. Wire the deposit" in (
        revised.prompt
    )
    assert len(model.requests) == 3, "nothing of the revised plan ran before its approval"
    done = await runner.resume(ctx(model), json.loads(json.dumps(revised.state)), PlanDecision(choice="approve"))
    assert isinstance(done, FinalAnswer) and done.text == "Booked and paid."
    model.assert_complete()


async def test_a_rejected_revision_stops_with_what_was_done() -> None:
    model = ScriptedModel([plan("Find a venue"), "Venue: Hall A", replan("Wire 5,000 EUR to Hall A")])
    runner = PlanExecuteRunner()
    paused = await runner.run(ctx(model), Message.user("Plan my team offsite"))
    assert isinstance(paused, InterruptRequest)
    revised = await runner.resume(ctx(model), paused.state, PlanDecision(choice="approve"))
    assert isinstance(revised, InterruptRequest)
    done = await runner.resume(ctx(model), revised.state, PlanDecision(choice="reject"))
    assert isinstance(done, FinalAnswer)
    assert "revised plan was rejected" in done.text and "Find a venue: Venue: Hall A" in done.text
    model.assert_complete()


async def test_the_plan_shown_is_the_plan_that_runs_when_it_is_too_long() -> None:
    steps = [f"step {i}" for i in range(1, 101)]
    model = ScriptedModel([plan(*steps)])
    runner = PlanExecuteRunner(max_steps=10)
    paused = await runner.run(ctx(model), Message.user("x"))
    assert isinstance(paused, InterruptRequest)
    assert "10. step 10" in paused.prompt and "step 11" not in paused.prompt
    assert "proposed 100 steps; at most 10 run, so only these 10 would" in paused.prompt
    assert "at most 10" in (model.requests[0].system or "")
    for i in range(1, 11):
        model.add(f"r{i}", replan(*steps[i:]))
    done = await runner.resume(ctx(model), paused.state, PlanDecision(choice="approve"))
    assert isinstance(done, FinalAnswer)
    assert "limit of 10 steps" in done.text and "step 10: r10" in done.text and "step 11" in done.text
    assert sum(1 for r in model.requests if "Do this step now" in (r.messages[-1].text or "")) == 10
    model.assert_complete()


async def test_edit_feedback_replans_and_reject_ends() -> None:
    model = ScriptedModel([plan("A"), plan("A", "B")])
    runner = PlanExecuteRunner()
    first = await runner.run(ctx(model), Message.user("do things"))
    assert isinstance(first, InterruptRequest)
    second = await runner.resume(ctx(model), first.state, PlanDecision(choice="edit", feedback="add B"))
    assert isinstance(second, InterruptRequest) and "v2" in second.prompt and "2. B" in second.prompt
    assert "add B" in (model.requests[1].messages[-1].text or "")
    end = await runner.resume(ctx(model), second.state, PlanDecision(choice="reject"))
    assert isinstance(end, FinalAnswer) and "rejected" in end.text
    model.assert_complete()


async def test_edit_button_without_text_asks_for_feedback() -> None:
    model = ScriptedModel([plan("A"), plan("B")])
    runner = PlanExecuteRunner()
    first = await runner.run(ctx(model), Message.user("x"))
    ask = await runner.resume(ctx(model), first.state, PlanDecision(choice="edit"))  # type: ignore[union-attr]
    assert isinstance(ask, InterruptRequest) and ask.kind == "ask_user"
    again = await runner.resume(ctx(model), ask.state, Answer(text="do B instead"))
    assert isinstance(again, InterruptRequest) and "1. B" in again.prompt
    model.assert_complete()


async def test_invalid_plan_repaired_once_then_clear_failure() -> None:
    bad = ModelResponse(text='{"steps": []}', parsed={"steps": []})
    model = ScriptedModel([bad, plan("ok step")])
    runner = PlanExecuteRunner(approval="never")
    model.add("did it", respond("all done"))
    result = await runner.run(ctx(model), Message.user("x"))
    assert isinstance(result, FinalAnswer) and result.text == "all done"
    assert "previous reply was invalid" in (model.requests[1].system or "")
    model2 = ScriptedModel([ModelResponse(text="not json"), bad])
    failed = await PlanExecuteRunner().run(ctx(model2), Message.user("x"))
    assert isinstance(failed, FinalAnswer) and "could not make a plan" in failed.text
    model.assert_complete()
    model2.assert_complete()


async def test_step_cap_gives_a_partial_answer() -> None:
    model = ScriptedModel([plan("s1", "s2", "s3"), "r1", replan("s2", "s3"), "r2", replan("s3")])
    result = await PlanExecuteRunner(approval="never", max_steps=2).run(ctx(model), Message.user("x"))
    assert isinstance(result, FinalAnswer)
    assert "limit of 2 steps" in result.text and "s1: r1" in result.text and "s3" in result.text
    model.assert_complete()


async def test_approval_if_steps_over() -> None:
    model = ScriptedModel([plan("one"), "r", respond("fine")])
    result = await PlanExecuteRunner(approval=2).run(ctx(model), Message.user("x"))
    assert isinstance(result, FinalAnswer) and result.text == "fine"
    model.assert_complete()


async def test_tool_confirm_inside_a_step_resumes_inside_it() -> None:
    ran: list[str] = []

    @tool(risk="high")
    async def deploy(env: str) -> str:
        """Deploy."""
        ran.append(env)
        return f"deployed {env}"

    model = ScriptedModel(
        [plan("Deploy to staging"), call("deploy", {"env": "staging"}, id="d"), "staging is up", respond("Deployed.")]
    )
    runner = PlanExecuteRunner(approval="never")
    paused = await runner.run(ctx(model, [deploy]), Message.user("deploy"))
    assert isinstance(paused, InterruptRequest) and paused.kind == "tool_confirm"
    assert paused.state["phase"] == "execute" and paused.state["inner"]["phase"] == "tool_confirm"
    assert ran == []
    done = await runner.resume(
        ctx(model, [deploy]), json.loads(json.dumps(paused.state)), ToolDecision(approved=("d",))
    )
    assert isinstance(done, FinalAnswer) and done.text == "Deployed." and ran == ["staging"]
    model.assert_complete()
