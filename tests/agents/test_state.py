"""RunState: the checkpoint of a paused run — what gateways stored before it existed reads back; newer is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.messages import Message, ToolCall, ToolResult
from agents.resolutions import Answer, PlanDecision, ToolDecision, resolution_for, unanswered
from agents.state import RUN_STATE_VERSION, RunState, RunStateError

CALL = ToolCall(id="c1", name="delete_cache", args={"path": "/tmp/build"})
FIRST = Message.user("delete the build cache").model_dump(mode="json", exclude_defaults=True)
TURN = Message(role="assistant", tool_calls=(CALL,), agent="code-fixer").model_dump(mode="json", exclude_defaults=True)
REACT_STATE: dict[str, Any] = {"v": 1, "phase": "tool_confirm", "iteration": 1, "messages": [FIRST, TURN]}

# Exactly what the run manager stored before RunState (make_checkpoint + the handoff and graph parts).
OLD_V1: dict[str, Any] = {
    "$schemaVersion": 1,
    "agent": "code-fixer",
    "runner": "react",
    "phase": "tool_confirm",
    "state": REACT_STATE,
    "handoff_chain": ["debugger", "code-fixer"],
    "handoff": {
        "context": {"from": "debugger", "to": "code-fixer", "reason": "a fix is needed", "chain": ["debugger"]},
        "messages": [{"role": "assistant", "text": "handing off", "agent": "debugger"}],
    },
    "graph": {"graph": "triage", "node": "fix", "state": {"triage": {"severity": "high"}}, "steps": 2},
}


def test_a_version_1_dict_stored_before_runstate_reads_as_it_was() -> None:
    state = RunState.load(json.loads(json.dumps(OLD_V1)))
    assert (state.version, state.agent, state.runner, state.phase) == (1, "code-fixer", "react", "tool_confirm")
    assert state.state == REACT_STATE
    assert state.chain == ["debugger", "code-fixer"]
    assert state.message() == Message.user("delete the build cache") and state.query() == "delete the build cache"
    assert [m.text for m in state.prefix()] == ["handing off"]
    handoff = state.handoff_context()
    assert handoff is not None and (handoff.source, handoff.target, handoff.reason) == (
        "debugger",
        "code-fixer",
        "a fix is needed",
    )
    position = state.position()
    assert position is not None and (position.graph, position.node, position.steps) == ("triage", "fix", 2)
    assert position.state == {"triage": {"severity": "high"}}


def test_the_encoded_state_is_the_version_1_shape() -> None:
    state = RunState.load(OLD_V1)
    assert json.loads(state.encode()) == OLD_V1
    assert RunState.load(state.encode()) == state
    bare = RunState(agent="react", runner="react", phase="tool_confirm", state=REACT_STATE, handoff_chain=["react"])
    stored = json.loads(bare.encode())
    assert stored["$schemaVersion"] == RUN_STATE_VERSION and "handoff" not in stored and "graph" not in stored
    assert ", " not in bare.encode(), "compact"


def test_a_version_0_checkpoint_is_upgraded() -> None:
    state = RunState.load({"agent": "react", "runner": "react", **REACT_STATE})
    assert state.version == 1 and state.agent == "react" and state.phase == "tool_confirm"
    assert state.state["messages"] == [FIRST, TURN] and state.chain == ["react"]


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ({**OLD_V1, "$schemaVersion": 2}, "checkpoint version 2 is not supported"),
        ({k: v for k, v in OLD_V1.items() if k != "agent"}, "checkpoint is missing 'agent'"),
        (None, "the run has no checkpoint"),
        ("{not json", "the checkpoint is not JSON"),
        ({**OLD_V1, "handoff_chain": "debugger"}, "checkpoint is malformed"),
    ],
)
def test_what_cannot_be_resumed_is_refused_with_why(stored: Any, why: str) -> None:
    with pytest.raises(RunStateError, match=why):
        RunState.load(stored)


def test_a_closed_run_answers_every_open_call() -> None:
    messages = RunState.load(OLD_V1).closed_messages("denied: cancelled by the user")
    assert [m.role for m in messages] == ["assistant", "assistant", "tool"]
    assert messages[-1].tool_results == (
        ToolResult(call_id="c1", name="delete_cache", content="denied: cancelled by the user", is_error=True),
    )


def test_resolutions_stored_before_the_per_kind_types_read_by_kind() -> None:
    tool = resolution_for("tool_confirm", {"approved": ["c1"], "grant": True, "choice": "g"})
    assert tool == ToolDecision(approved=("c1",), grant=True, choice="g")
    edited = resolution_for("tool_confirm", {"approved": ["c1"], "choice": "e", "edited": {"c1": {"path": "/x"}}})
    assert isinstance(edited, ToolDecision) and edited.edited == {"c1": {"path": "/x"}}
    answer = resolution_for("ask_user", {"choice": "o1", "answer": "Rome"})
    assert answer == Answer(choice="o1", text="Rome")
    plan = resolution_for("plan_approval", {"choice": "edit", "feedback": "add B"})
    assert plan == PlanDecision(choice="edit", feedback="add B")
    assert resolution_for("tool_confirm", None, unanswered="denied: expired") == ToolDecision(reason="denied: expired")
    # The keys stay those of the rows: what is written now reads back the same, by any version.
    assert Answer(text="Rome", choice="o1").to_json() == {"choice": "o1", "answer": "Rome"}
    assert unanswered("ask_user", "denied: cancelled").to_json() == {"reason": "denied: cancelled"}


def test_a_decision_cannot_be_changed_after_it_was_made() -> None:
    decision = ToolDecision(approved=("c1",))
    with pytest.raises(ValueError):
        decision.approved = ("c1", "c2")  # type: ignore[misc]
