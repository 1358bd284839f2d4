"""Handoffs between agents (transfer_to_* tools) and JSON-schema guardrails, through the real gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call, calls
from tests.helpers.handoffs import AGENTS, toolbox, transfer, write_agents

SCHEMA_AGENT = """---
kind: agent
name: {name}
description: Answers in JSON.
runner: chat
guardrails:
  - name: shape
    policy: {policy}
    max_repairs: 1
    output_schema: {{type: object, required: [answer], properties: {{answer: {{type: string}}}}}}
---
Answer in JSON.
"""


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    schema_agents = {f"json-{p}": SCHEMA_AGENT.format(name=f"json-{p}", policy=p) for p in ("repair", "reject", "warn")}
    return write_agents(tmp_path / "agents", {**AGENTS, **schema_agents})


async def test_three_agent_chain_passes_context(make_harness: Any, agents_dir: Path) -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            call("inspect", {"path": "app.py"}, id="i1"),
            transfer("fixer", "foo is None on line 3", "t1", summary="foo() crashes", context="app.py line 3"),
            transfer("reviewer", "patch ready", "t2", summary="guarded foo"),
            '{"verdict": "ok"}',
        ]
    )
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox(ran))
    out = await h.say("@debugger AttributeError in app.py")
    assert out == [
        "🔀 debugger → fixer: foo is None on line 3",
        "🔀 fixer → reviewer: patch ready",
        '{"verdict": "ok"}',
    ]
    assert ran == ["inspect app.py"]
    debugger, _, fixer, reviewer = model.requests
    assert "transfer_to_fixer" in {t.name for t in debugger.tools}
    assert "transfer_to_reviewer" not in {t.name for t in debugger.tools}
    assert fixer.system is not None and reviewer.system is not None
    assert "The debugger agent handed this conversation to you (fixer)" in fixer.system
    assert "Summary so far: foo() crashes" in fixer.system and "Context: app.py line 3" in fixer.system
    assert "Chain: debugger → fixer" in fixer.system
    assert "user: AttributeError in app.py" in fixer.system  # include_context: the recent conversation
    assert "Chain: debugger → fixer → reviewer" in reviewer.system
    assert "Recent conversation" not in reviewer.system  # this handoff does not include context
    # The target starts from the user's message, not from the other agent's tool traffic.
    assert fixer.messages[-1].text == "AttributeError in app.py"
    history = await h.gateway.store.history(str(h.chat()))
    names = [c.name for m in history for c in m.tool_calls]
    assert names == ["inspect", "transfer_to_fixer", "transfer_to_reviewer"]
    assert history[-1].agent == "reviewer"
    run = (await h.gateway.store.read("SELECT agent, status FROM runs"))[0]
    assert tuple(run) == ("reviewer", "done")


async def test_target_outside_whitelist_is_a_tool_error(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel([transfer("reviewer", "skip the fix", "t1"), "I will explain it myself."])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox([]))
    assert await h.say("@debugger help") == ["I will explain it myself."]
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and "not allowed" in str(result.content) and "fixer" in str(result.content)


async def test_cycle_is_refused(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel(
        [transfer("fixer", "found it", "t1"), transfer("debugger", "not sure", "t2"), "Here is the fix."]
    )
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox([]))
    assert await h.say("@debugger crash") == ["🔀 debugger → fixer: found it", "Here is the fix."]
    result = model.requests[2].messages[-1].tool_results[0]
    assert result.is_error and "cycle" in str(result.content) and "debugger → fixer → debugger" in str(result.content)


async def test_depth_limit(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel([transfer("fixer", "found it", "t1"), transfer("reviewer", "check", "t2"), "Done."])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox([]), handoffs={"max_depth": 1})
    assert await h.say("@debugger crash") == ["🔀 debugger → fixer: found it", "Done."]
    result = model.requests[2].messages[-1].tool_results[0]
    assert result.is_error and "limit 1" in str(result.content)


async def test_one_handoff_per_turn_and_other_calls_not_run(make_harness: Any, agents_dir: Path) -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            calls(
                ("transfer_to_reviewer", {"reason": "a"}, "t1"),
                ("transfer_to_debugger", {"reason": "b"}, "t2"),
                ("patch", {"path": "x", "change": "y"}, "p1"),
            ),
            '{"verdict": "changes"}',
        ]
    )
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox(ran))
    assert (await h.say("@fixer fix it"))[-1] == '{"verdict": "changes"}'
    assert ran == []
    history = await h.gateway.store.history(str(h.chat()))
    results = {r.call_id: str(r.content) for m in history for r in m.tool_results}
    assert results["t1"] == "transferred to reviewer"
    assert "only one handoff per turn" in results["t2"]
    assert results["p1"] == "not run: handed off to reviewer"


async def test_confirmation_in_a_handoff_target_resumes_after_restart(make_harness: Any, agents_dir: Path) -> None:
    ran: list[str] = []
    tools = toolbox(ran)
    model = ScriptedModel(
        [transfer("fixer", "null check missing", "t1"), call("patch", {"path": "app.py", "change": "guard"}, id="p1")]
    )
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=tools)
    out = await h.say("@debugger crash in app.py")
    assert out[0] == "🔀 debugger → fixer: null check missing"
    assert 'patch(path="app.py", change="guard")' in out[-1]
    model.assert_complete()

    approve = h.payload("Approve")
    resumed = ScriptedModel(["Patched app.py."])
    await h.restart(resumed, tools)
    assert (await h.send(h.press(approve)))[-1] == "Patched app.py."
    assert ran == ["patch app.py"]
    system = resumed.requests[0].system or ""
    assert "The debugger agent handed this conversation to you (fixer)" in system  # from the checkpoint
    history = await h.gateway.store.history(str(h.chat()))
    assert [c.name for m in history for c in m.tool_calls] == ["transfer_to_fixer", "patch"]
    assert history[-1].agent == "fixer" and history[-1].text == "Patched app.py."


async def test_cancelled_handoff_run_keeps_both_agents_turns(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel([transfer("fixer", "found it", "t1"), call("patch", {"path": "a", "change": "b"}, id="p1")])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=toolbox([]))
    await h.say("@debugger crash")
    await h.say("/cancel")
    history = await h.gateway.store.history(str(h.chat()))
    assert [c.name for m in history for c in m.tool_calls] == ["transfer_to_fixer", "patch"]


async def test_guardrail_repair_succeeds_on_second_try(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel(["Sure! The answer is 42.", '```json\n{"answer": "42"}\n```'])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]})
    assert await h.say("@json-repair what is it") == ['```json\n{"answer": "42"}\n```']
    repair = model.requests[1].messages
    assert repair[-2].text == "Sure! The answer is 42."
    assert "not JSON" in (repair[-1].text or "") and "shape" in (repair[-1].text or "")
    history = await h.gateway.store.history(str(h.chat()))
    assert [m.text for m in history if m.role == "assistant"] == ['```json\n{"answer": "42"}\n```']


async def test_guardrail_repair_gives_up_after_max_repairs(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel(["nope", '{"answer": 42}'])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]})
    (reply,) = await h.say("@json-repair what is it")
    assert "did not pass its check “shape”" in reply and "42" not in reply


async def test_guardrail_reject_hides_the_invalid_answer(make_harness: Any, agents_dir: Path) -> None:
    model = ScriptedModel(["secret invalid output"])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]})
    (reply,) = await h.say("@json-reject go")
    assert "did not pass" in reply and "secret" not in reply
    history = await h.gateway.store.history(str(h.chat()))
    assert all("secret" not in (m.text or "") for m in history)


async def test_guardrail_warn_passes_and_records(
    make_harness: Any, agents_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel(['{"answer": 1}'])
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]})
    assert await h.say("@json-warn go") == ['{"answer": 1}']
    assert any(
        "guardrail shape" in r.getMessage() and "expected string, got integer" in r.getMessage() for r in caplog.records
    )


def test_handoff_context_round_trips() -> None:
    from agents.handoffs import HandoffContext

    ctx = HandoffContext("a", "b", "why", "sum", "ctx", ["a", "b"], "corr", ["user: hi"])
    assert HandoffContext.from_json(json.loads(json.dumps(ctx.to_json()))) == ctx


CONDITIONAL = {
    "fixer": """---
name: fixer
description: Writes the fix.
runner: react
handoffs:
  - to: reviewer
    when: task.status == 'need-review' and task.files
    payload:
      schema:
        type: object
        required: [task]
        properties:
          task:
            type: object
            required: [status, files]
            properties: {status: {enum: [draft, need-review]}, files: {type: array, items: {type: string}}}
---
You fix code.
""",
    "reviewer": """---
name: reviewer
description: Reviews a change.
runner: react
---
You review code.
""",
}


async def test_a_handoff_is_refused_by_its_condition_and_accepted_with_a_payload(
    make_harness: Any, tmp_path: Path
) -> None:
    draft = {"task": {"status": "draft", "files": ["app.py"]}}
    ready = {"task": {"status": "need-review", "files": ["app.py"]}}
    model = ScriptedModel(
        [
            call("transfer_to_reviewer", {"reason": "done?", "payload": {"task": {"status": "done"}}}, id="h1"),
            call("transfer_to_reviewer", {"reason": "please look", "payload": draft}, id="h2"),
            call("transfer_to_reviewer", {"reason": "ready for review", "payload": ready}, id="h3"),
            "Looks good.",
        ]
    )
    h = await make_harness(model, agents={"dirs": [str(write_agents(tmp_path / "agents", CONDITIONAL))]})
    assert (await h.say("@fixer fix the crash in app.py"))[-1] == "Looks good."
    declared = next(t for t in model.requests[0].tools if t.name == "transfer_to_reviewer")
    assert declared.parameters["required"] == ["reason", "payload"], "the payload schema is the tool's"
    assert "Only when task.status == 'need-review' and task.files" in declared.description

    invalid = model.requests[1].messages[-1].tool_results[0]
    assert invalid.is_error and "payload/task" in (invalid.content or ""), "the schema refuses it first"
    refused = model.requests[2].messages[-1].tool_results[0]
    assert refused.is_error and (refused.content or "").startswith(
        "handoff to 'reviewer' refused: its condition `task.status == 'need-review' and task.files` does not hold"
    )
    assert "task.status is 'draft'" in (refused.content or "")
    target = model.requests[3]
    assert 'Payload: {"task": {"status": "need-review", "files": ["app.py"]}}' in (target.system or "")
    await h.gateway.tracing.flush()
    [events] = await h.gateway.tracing.runs(str(h.chat()))
    handoffs = [(e.data["status"], e.data.get("payload")) for e in events if e.type == "handoff"]
    assert handoffs == [("refused", {"task": {"status": "done"}}), ("refused", draft), ("accepted", ready)]


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        (
            "tsk.status == 'need-review'",
            "reads 'tsk', which is not among the payload's properties (task); did you mean 'task'?",
        ),
        ("task.status = 'need-review'", "when: unexpected '='"),
    ],
)
def test_a_condition_that_cannot_work_is_refused_at_load(when: str, problem: str) -> None:
    from agents.spec import SpecFileError, parse_agent_text

    text = CONDITIONAL["fixer"].replace("task.status == 'need-review' and task.files", when)
    with pytest.raises(SpecFileError) as caught:
        parse_agent_text(text, source="fixer.md")
    assert problem in str(caught.value) and "handoffs" in str(caught.value)
