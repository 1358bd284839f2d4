"""The guide's "Adding a tool that needs approval" (docs/extending.md), done as it says: the tool written with
``needs_approval=True`` and nothing else; a ReAct agent calls it, the run pauses before anything runs or is
recorded, the stored pause survives a fresh loop (a restart), and the call runs once with the arguments approved
— or not at all when refused."""

from __future__ import annotations

from pathlib import Path

from agents.loop import AgentLoop, Leg, LoopSettings, Paused
from agents.messages import Message, ToolCall
from agents.models.scripted import ScriptedModel, call
from agents.react import ReactRunner
from agents.resolutions import ToolDecision
from agents.tools.base import ToolContext, tool
from tests.helpers.agent_loop import Agent, Catalog, Ports, paused_then_resumed

deleted: list[int] = []


@tool(risk="medium", needs_approval=True)
async def delete_note(ctx: ToolContext, note_id: int) -> str:
    """Delete one of the user's notes by its number."""
    deleted.append(note_id)
    return f"deleted note {note_id}"


def _loop(answers: list[object]) -> tuple[AgentLoop, Ports, Agent]:
    agent = Agent("notes", ReactRunner("notes"))
    ports = Ports(ScriptedModel(answers), tools=[delete_note])  # type: ignore[arg-type]
    return AgentLoop(Catalog(agent), ports, LoopSettings()), ports, agent


async def test_the_new_tool_waits_for_a_yes_and_runs_once_as_approved() -> None:
    deleted.clear()
    loop, ports, agent = _loop([call("delete_note", {"note_id": 3}, id="c1"), "Deleted note 3."])
    state, done = await paused_then_resumed(loop, ports, agent, "delete note 3", ToolDecision(approved=("c1",)))
    assert state.phase == "tool_confirm"
    assert ports.log.count("persisted tool_confirm") == 1, "the pause is stored before the person is asked"
    assert deleted == [3], "ran once, after the yes, with the arguments approved"
    assert done.answer.text == "Deleted note 3."


async def test_nothing_runs_or_is_recorded_before_the_answer_and_a_no_runs_nothing() -> None:
    deleted.clear()
    loop, ports, agent = _loop([call("delete_note", {"note_id": 3}, id="c1")])
    message = Message.user("delete note 3")
    leg = await loop.first_leg(agent, message)
    assert isinstance(leg, Leg)
    paused = await loop.drive(leg, lambda: agent.runner.run(leg.ctx, message))
    assert isinstance(paused, Paused) and paused.request.kind == "tool_confirm"
    assert "delete_note(note_id=3)" in paused.request.prompt
    assert deleted == [] and await leg.ctx.ledger.get("", ToolCall(id="c1", name="delete_note", args={})) is None

    deleted.clear()
    loop, ports, agent = _loop([call("delete_note", {"note_id": 3}, id="c1"), "I left it."])
    _state, done = await paused_then_resumed(loop, ports, agent, "delete note 3", ToolDecision(approved=()))
    assert deleted == [] and done.answer.text == "I left it."


def test_the_guide_shows_this_tool() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    section = guide.split("## Adding a tool that needs approval", 1)[1].split("\n## ", 1)[0]
    assert '@tool(risk="medium", needs_approval=True)' in section and "async def delete_note(" in section
    assert "tests/agents/test_adding_an_approval_tool.py" in section
