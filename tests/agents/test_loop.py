"""The agent loop against in-memory ports: handoffs, guardrails, pauses persisted before the human is asked,
and the approval toolset deciding which calls wait."""

from __future__ import annotations

from typing import Any

from agents.approval import NEVER_GRANTED, ApprovalRequired, approval_required, approval_rule, by_risk, grantable
from agents.chat import ChatRunner
from agents.context import RunContext
from agents.graph import GraphRunner
from agents.guardrails import GuardrailRule
from agents.handoffs import HandoffTarget
from agents.loop import AgentLoop, Finished, Leg, LoopSettings, Paused, Stopped, pause
from agents.messages import Message, ToolCall
from agents.models.base import ModelResponse
from agents.models.scripted import ScriptedModel, call
from agents.plan_execute import PlanExecuteRunner
from agents.react import ReactRunner
from agents.resolutions import PlanDecision, Resolution, ToolDecision
from agents.results import FinalAnswer, InterruptRequest, Resumable, RunResult
from agents.specs.graph import GraphSpec
from agents.state import RunState
from agents.tools.base import Tool, tool
from agents.tools.calls import describe_call
from tests.helpers.agent_loop import Agent, Catalog, Ports, paused_then_resumed

ran: list[str] = []


@tool(risk="medium", needs_approval=True)
async def deploy(target: str) -> str:
    """Deploy."""
    ran.append(target)
    return f"deployed {target}"


def agents() -> tuple[Agent, Agent]:
    debugger = Agent("debugger", ReactRunner("debugger"), handoffs=[HandoffTarget(to="fixer")])
    return debugger, Agent("fixer", ReactRunner("fixer"))


async def test_a_handoff_continues_with_the_target_and_keeps_the_turns_before() -> None:
    model = ScriptedModel([call("transfer_to_fixer", {"reason": "a fix is needed"}, id="h1"), "Fixed."])
    debugger, fixer = agents()
    ports = Ports(model)
    loop = AgentLoop(Catalog(debugger, fixer), ports, LoopSettings(notify="{from} → {to}: {reason}"))
    message = Message.user("the build fails")
    leg = await loop.first_leg(debugger, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: debugger.runner.run(leg.ctx, message))
    assert isinstance(outcome, Finished) and outcome.answer.text == "Fixed."
    assert outcome.leg.chain == ["debugger", "fixer"] and loop.leg is outcome.leg
    assert [m.role for m in outcome.messages] == ["assistant", "tool", "assistant"]
    assert ports.log == [
        "context debugger",
        "notice debugger → fixer: a fix is needed",
        "context fixer",
        "handed off fixer",
    ]
    assert "The debugger agent handed this conversation to you (fixer)." in (model.requests[1].system or "")
    model.assert_complete()


async def test_a_handoff_to_an_agent_that_is_gone_stops_the_run_with_why() -> None:
    model = ScriptedModel([call("transfer_to_fixer", {"reason": "fix"}, id="h1")])
    debugger, _fixer = agents()
    loop = AgentLoop(Catalog(debugger), Ports(model), LoopSettings())
    message = Message.user("the build fails")
    leg = await loop.first_leg(debugger, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: debugger.runner.run(leg.ctx, message))
    assert isinstance(outcome, Stopped) and "'fixer', which is not available" in outcome.text
    assert [m.role for m in outcome.messages] == ["assistant", "tool"], "its turns so far are kept"


async def test_a_guardrail_repairs_the_answer() -> None:
    model = ScriptedModel(["not json", '{"ok": true}'])
    rule = GuardrailRule("shape", {"type": "object", "required": ["ok"]}, policy="repair")
    agent = Agent("strict", ReactRunner("strict"), guardrails=[rule])
    loop = AgentLoop(Catalog(agent), Ports(model), LoopSettings())
    message = Message.user("answer in JSON")
    leg = await loop.first_leg(agent, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: agent.runner.run(leg.ctx, message))
    assert isinstance(outcome, Finished) and outcome.answer.text == '{"ok": true}'
    model.assert_complete()


async def test_a_pause_is_persisted_before_the_human_is_asked_and_holds_the_handoff() -> None:
    ran.clear()
    model = ScriptedModel([call("transfer_to_fixer", {"reason": "fix"}, id="h1"), call("deploy", {"target": "prod"})])
    debugger, fixer = agents()
    ports = Ports(model, tools=[deploy])
    loop = AgentLoop(Catalog(debugger, fixer), ports, LoopSettings())
    message = Message.user("ship it")
    leg = await loop.first_leg(debugger, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: debugger.runner.run(leg.ctx, message))
    assert isinstance(outcome, Paused) and outcome.request.kind == "tool_confirm"
    assert ran == [], "nothing runs before it is approved"
    await pause(outcome.leg, outcome.request, ports, ports)
    assert ports.log[-2:] == ["persisted tool_confirm", "asked prompt-1"]
    (state,) = ports.persisted
    assert (state.agent, state.runner, state.phase, state.chain) == (
        "fixer",
        "react",
        "tool_confirm",
        ["debugger", "fixer"],
    )
    assert state.message() == message and [m.role for m in state.prefix()] == ["assistant", "tool"]
    handoff = state.handoff_context()
    assert handoff is not None and handoff.source == "debugger" and state.graph is None


def triage(nodes: dict[str, str]) -> Agent:
    spec = GraphSpec.model_validate(
        {
            "entry": "analyze",
            "nodes": nodes,
            "edges": [{"from": "analyze", "to": "fix", "when": "analyze.broken"}, {"from": "fix", "to": "END"}],
        }
    )
    return Agent("triage", GraphRunner("triage", spec), kind="graph")


async def test_a_graph_runs_its_nodes_in_turn_and_ends_with_the_last_answer() -> None:
    model = ScriptedModel(['{"broken": true}', "Fixed it."])
    graph = triage({"analyze": "debugger", "fix": "fixer"})
    debugger, fixer = agents()
    ports = Ports(model)
    loop = AgentLoop(Catalog(graph, debugger, fixer), ports, LoopSettings(notify="{from} → {to}"))
    message = Message.user("the build fails")
    leg = await loop.first_leg(graph, message)
    assert isinstance(leg, Leg) and leg.agent is debugger and leg.graph is not None
    outcome = await loop.drive(leg, lambda: debugger.runner.run(leg.ctx, message))
    assert isinstance(outcome, Finished) and outcome.answer.text == "Fixed it."
    assert outcome.leg.graph is not None and outcome.leg.graph.state == {
        "analyze": {"broken": True},
        "fix": {"answer": "Fixed it."},
    }
    assert [m.text for m in outcome.messages] == ['{"broken": true}', "Fixed it."], "every node's turns are kept"
    assert ports.log == [
        "context debugger",
        "trace graph",
        "notice 🧭 triage: analyze → fix",
        "context fixer",
        "trace graph",
    ]


async def test_a_graph_whose_next_node_is_gone_stops_once_with_why() -> None:
    model = ScriptedModel(['{"broken": true}'])
    graph = triage({"analyze": "debugger", "fix": "fixer"})
    debugger, _fixer = agents()
    loop = AgentLoop(Catalog(graph, debugger), Ports(model), LoopSettings())
    message = Message.user("the build fails")
    leg = await loop.first_leg(graph, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: debugger.runner.run(leg.ctx, message))
    assert isinstance(outcome, Stopped) and "node 'fix' runs 'fixer', which is not available" in outcome.text
    assert [m.text for m in outcome.messages] == ['{"broken": true}']


def test_the_approval_rule_of_an_agent_in_a_chat() -> None:
    low = Tool(name="note", description="", parameters={"type": "object"}, func=deploy.func, risk="low")
    high = Tool(name="wipe", description="", parameters={"type": "object"}, func=deploy.func, risk="high")
    shell = Tool(name="run_command", description="", parameters={"type": "object"}, func=deploy.func, risk="high")
    some = ToolCall(id="c", name="x", args={})
    assert [by_risk(t, some) for t in (low, high, deploy)] == [False, True, True]
    rule = approval_rule(listed=lambda name: name == "note", granted={"wipe", "run_command"})
    assert rule(low, some), "the agent's own confirmation list"
    assert not rule(high, some), "granted in this chat"
    assert rule(shell, some), "never granted"
    assert grantable(["wipe", "run_command", "note"]) == ["note", "wipe"], sorted(NEVER_GRANTED)
    toolset = approval_required([low, high], rule)
    assert toolset.tools == (low, high) and toolset.needs_approval(low, some)


async def test_the_loop_resumes_every_runner_kind_from_its_stored_state() -> None:
    """react, chat (with a tool), plan-execute and a graph's node: the loop finds how each resumes, not the
    gateway; the resumed leg's context is built as a resumed one (its ledger holds the calls before the pause)."""
    for runner in (ReactRunner("ops"), ChatRunner("ops"), PlanExecuteRunner("ops", approval="always")):
        assert isinstance(runner, Resumable)
        ran.clear()
        agent = Agent("ops", runner, kind=type(runner).__name__)
        if isinstance(runner, PlanExecuteRunner):
            plan = ModelResponse(text='{"steps": ["ship"]}', parsed={"steps": ["ship"]})
            respond = {"action": "respond", "answer": "Shipped."}
            model = ScriptedModel([plan, "done", ModelResponse(text="", parsed=respond)])
            resolution: Resolution = PlanDecision(choice="approve")
        else:
            model = ScriptedModel([call("deploy", {"target": "prod"}, id="d"), "Shipped."])
            resolution = ToolDecision(approved=("d",))
        ports = Ports(model, tools=[deploy])
        loop = AgentLoop(Catalog(agent), ports, LoopSettings())
        state, done = await paused_then_resumed(loop, ports, agent, "ship it", resolution)
        plans = isinstance(runner, PlanExecuteRunner)
        assert state.phase == ("approval" if plans else "tool_confirm") and done.answer.text == "Shipped."
        assert ran == ([] if plans else ["prod"]) and "context ops resumed" in ports.log
        model.assert_complete()


async def test_the_loop_resumes_a_graph_inside_its_node_and_goes_on_to_the_next() -> None:
    ran.clear()
    model = ScriptedModel([call("deploy", {"target": "prod"}, id="d"), '{"broken": true}', "Fixed it."])
    graph = triage({"analyze": "debugger", "fix": "fixer"})
    debugger, fixer = agents()
    ports = Ports(model, tools=[deploy])
    loop = AgentLoop(Catalog(graph, debugger, fixer), ports, LoopSettings())
    state, done = await paused_then_resumed(loop, ports, graph, "the build fails", ToolDecision(approved=("d",)))
    assert (state.agent, state.graph is not None and state.graph.node) == ("debugger", "analyze")
    assert ran == ["prod"] and done.answer.text == "Fixed it." and done.leg.agent is fixer
    model.assert_complete()


async def test_a_paused_run_whose_agent_cannot_resume_stops_with_why() -> None:
    graph = triage({"analyze": "debugger", "fix": "fixer"})
    loop = AgentLoop(Catalog(graph), Ports(ScriptedModel([])), LoopSettings())
    for name in ("triage", "gone"):  # a graph is run node by node: its runner has no resume
        state = RunState(agent=name, runner="react", state={})
        stopped = await loop.resume(state, ToolDecision())
        assert isinstance(stopped, Stopped) and f"the agent {name!r} is no longer available" in stopped.text


class OneCall(Resumable):
    """Not ReAct: calls the tool its message names once, through the run's toolset, and answers its result."""

    name = "one-call"

    async def run(self, ctx: RunContext, message: Message) -> RunResult:
        tool_name, _, target = (message.text or "").partition(" ")
        call = ToolCall(id="t1", name=tool_name, args={"target": target})
        try:
            result = await ctx.toolset.call_tool(ctx, call, agent=self.name)
        except ApprovalRequired as held:
            prompt = describe_call(held.call, None)
            return InterruptRequest(kind="tool_confirm", prompt=prompt, state={"call": call.model_dump(mode="json")})
        return FinalAnswer(text=str(result.content))

    async def resume(self, ctx: RunContext, state: dict[str, Any], resolution: Resolution) -> RunResult:
        call = ToolCall.model_validate(state["call"])
        if not (isinstance(resolution, ToolDecision) and call.id in resolution.approved):
            return FinalAnswer(text="not run")
        result = await ctx.toolset.call_tool(ctx, call, agent=self.name, approved=True)
        return FinalAnswer(text=str(result.content))


async def test_a_runner_other_than_react_pauses_before_a_tool_that_needs_approval_runs() -> None:
    """The toolset enforces the rule when the tool is called: a runner cannot forget it."""
    ran.clear()
    note = Tool(name="note", description="", parameters={"type": "object"}, func=deploy.func, risk="low")
    agent = Agent("one", OneCall(), kind="one-call")
    ports = Ports(ScriptedModel([]), tools=[deploy, note])
    loop = AgentLoop(Catalog(agent), ports, LoopSettings())
    state, done = await paused_then_resumed(loop, ports, agent, "deploy prod", ToolDecision(approved=("t1",)))
    assert state.phase == "tool_confirm" and done.answer.text == "deployed prod" and ran == ["prod"]
    ran.clear()
    message = Message.user("note x")  # low risk, not in any list: runs without asking
    leg = await loop.first_leg(agent, message)
    assert isinstance(leg, Leg)
    answered = await loop.drive(leg, lambda: agent.runner.run(leg.ctx, message))
    assert isinstance(answered, Finished) and ran == ["x"]
    message = Message.user("deploy prod")
    again = await loop.first_leg(agent, message)
    assert isinstance(again, Leg)
    paused = await loop.drive(again, lambda: agent.runner.run(again.ctx, message))
    assert isinstance(paused, Paused) and paused.request.prompt == 'deploy(target="prod")' and ran == ["x"]
    assert await again.ctx.ledger.get("", ToolCall(id="t1", name="deploy", args={})) is None, "nothing recorded"


def test_a_tool_that_needs_approval_has_one_name_and_confirm_is_its_older_alias() -> None:
    @tool(confirm=True)
    async def older(target: str) -> str:
        """Older."""
        return target

    assert older.needs_approval and deploy.needs_approval and by_risk(older, ToolCall(id="c", name="older"))
