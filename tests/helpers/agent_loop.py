"""The agent loop's ports in memory, for tests of the loop and of runners (``tests/agents``): an agent, the
gateway's side with every call recorded in order, a catalog, and a pause persisted then resumed on a fresh loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.approval import approval_required
from agents.context import RunContext
from agents.graph import GraphPosition
from agents.guardrails import GuardrailRule
from agents.handoffs import HandoffContext, HandoffTarget
from agents.loop import AgentLoop, Finished, Leg, LoopAgent, Paused, Resumption, pause
from agents.messages import Message
from agents.models.scripted import ScriptedModel
from agents.resolutions import Resolution
from agents.results import InterruptRequest, Runner
from agents.state import RunState
from agents.tools.base import Tool


@dataclass
class Agent:
    name: str
    runner: Runner
    kind: str = "react"
    guardrails: list[GuardrailRule] = field(default_factory=list)
    handoffs: list[HandoffTarget] = field(default_factory=list)
    system_prompt: str = ""

    def handoff_to(self, name: str) -> HandoffTarget | None:
        return next((h for h in self.handoffs if h.to == name), None)


@dataclass
class Ports:
    """The gateway's side, in memory: every call recorded in order."""

    model: ScriptedModel
    tools: list[Tool] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    persisted: list[RunState] = field(default_factory=list)

    async def context(
        self,
        agent: LoopAgent,
        *,
        chain: list[str],
        handoff: HandoffContext | None,
        query: str,
        graph: GraphPosition | None,
        resumed: bool = False,
    ) -> RunContext:
        self.log.append(f"context {agent.name}" + (" resumed" if resumed else ""))
        targets = tuple(agent.handoffs) if isinstance(agent, Agent) else ()
        return RunContext(
            chat_key="console:c1",
            model=self.model,
            toolset=approval_required(self.tools),
            handoffs=targets,
            handoff_chain=tuple(chain),
            system_extra=handoff.render() if handoff is not None else "",
        )

    async def notify(self, text: str) -> None:
        self.log.append(f"notice {text}")

    def trace(self, type: str, agent: str, **fields: Any) -> None:
        self.log.append(f"trace {type}")

    def handed_off(self, agent: str) -> None:
        self.log.append(f"handed off {agent}")

    async def persist_pause(self, state: RunState, request: InterruptRequest, agent: LoopAgent) -> str:
        self.persisted.append(RunState.load(state.encode()))
        self.log.append(f"persisted {request.kind}")
        return "prompt-1"

    async def ask(self, pending: str) -> None:
        self.log.append(f"asked {pending}")


class Catalog:
    def __init__(self, *agents: Agent) -> None:
        self.agents = {a.name: a for a in agents}

    def get(self, name: str) -> Agent | None:
        return self.agents.get(name)


async def paused_then_resumed(
    loop: AgentLoop, ports: Ports, agent: Agent, text: str, resolution: Resolution
) -> tuple[RunState, Finished]:
    """Run ``agent`` on ``text`` until it pauses, persist the pause, then resume the stored state with
    ``resolution`` on a fresh loop (as after a restart) and drive it to its answer."""
    message = Message.user(text)
    leg = await loop.first_leg(agent, message)
    assert isinstance(leg, Leg)
    outcome = await loop.drive(leg, lambda: leg.agent.runner.run(leg.ctx, message))
    assert isinstance(outcome, Paused), outcome
    await pause(outcome.leg, outcome.request, ports, ports)
    state = ports.persisted[-1]
    fresh = AgentLoop(loop.agents, ports, loop.settings)
    resumed = await fresh.resume(RunState.load(state.encode()), resolution)
    assert isinstance(resumed, Resumption) and resumed.leg.agent.name == state.agent
    done = await fresh.drive(resumed.leg, resumed.step)
    assert isinstance(done, Finished), done
    return state, done
