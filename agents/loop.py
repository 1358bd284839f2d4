"""The agent loop: run an agent, follow its handoffs and a graph's steps, check guardrails, pause for a human.

One run moves through *legs*: the agent answering now, after handoffs (or a graph's node).  The loop
decides everything about a run's course; the gateway supplies what it owns through ports:

- :class:`RunPorts`: the run context of a new leg, notices to the chat, trace events, the run's agent;
- :class:`PausePort` ("persist a pause"): store the :class:`~agents.state.RunState` with the pause,
  durably, before anyone is asked;
- :class:`HumanPort` ("ask a human"): send the prompt of a persisted pause.

A run begins with :meth:`AgentLoop.first_leg` (a new message) or :meth:`AgentLoop.resume` (a paused run's
:class:`~agents.state.RunState` and the human's resolution, handed to its runner's ``resume``: runners that
pause are :class:`~agents.results.Resumable`).  :meth:`AgentLoop.drive` returns how the run ended up
(:class:`Finished`, :class:`Paused` or :class:`Stopped`); the gateway records the finish, or hands a pause to
:func:`pause`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from agents.context import RunContext
from agents.graph import END, GraphPosition, GraphRunner
from agents.guardrails import GuardrailRule, enforce
from agents.handoffs import HandoffContext, HandoffTarget, recent_lines
from agents.messages import Message
from agents.models.base import AnswerStream
from agents.resolutions import Resolution
from agents.results import FinalAnswer, HandoffRequest, InterruptRequest, Resumable, Runner, RunResult
from agents.state import GraphAt, HandedOver, RunState

log = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)


class LoopAgent(Protocol):
    """An agent as the loop runs it (the gateway's agent definitions are these)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str:
        """Its runner's name (stored with a pause)."""
        ...

    @property
    def runner(self) -> Runner: ...
    @property
    def guardrails(self) -> Sequence[GuardrailRule]: ...
    @property
    def system_prompt(self) -> str: ...
    def handoff_to(self, name: str) -> HandoffTarget | None: ...


class AgentSource(Protocol):
    """The agents a run may reach (handoff targets, a graph's nodes)."""

    def get(self, name: str) -> LoopAgent | None: ...


class RunPorts(Protocol):
    """What the loop needs from the gateway for one run."""

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
        """The run context of a new leg (its history, tools, model, tracer); ``resumed``: the leg a paused run
        continues in (its tool ledger holds the calls that ran before the pause)."""
        ...

    async def notify(self, text: str) -> None:
        """A notice to the run's chat."""
        ...

    def trace(self, type: str, agent: str, **fields: Any) -> None: ...

    def handed_off(self, agent: str) -> None:
        """The run continues with ``agent`` (recorded, so a crash report names it)."""
        ...


class PausePort(Protocol[T_co]):
    """Persist a pause: the run's state, the interrupt and its prompt, durably and together."""

    async def persist_pause(self, state: RunState, request: InterruptRequest, agent: LoopAgent) -> T_co: ...


class HumanPort(Protocol[T_contra]):
    """Ask a human: send the prompt of a persisted pause."""

    async def ask(self, pending: T_contra) -> None: ...


@dataclass(frozen=True)
class LoopSettings:
    notify: str = ""
    """The line told in the chat on a handoff (``{from}``, ``{to}``, ``{reason}``); empty: none (nor graph steps)."""
    context_messages: int = 10
    """Recent messages a handoff that includes context passes on."""


@dataclass
class Leg:
    """The agent a run is in now: after handoffs, the last one of ``chain``."""

    agent: LoopAgent
    ctx: RunContext
    chain: list[str]
    message: Message | None = None
    """The user message the run started from."""
    prefix: list[Message] = field(default_factory=list)
    """Turns of the agents that handed off (or of a graph's earlier nodes), stored before this agent's own."""
    handoff: HandoffContext | None = None
    graph: GraphPosition | None = None
    """Inside a graph: the node this agent runs and the state so far."""


@dataclass(frozen=True)
class Finished:
    """The run ended with the agent's final answer (``leg``: the agent that gave it)."""

    answer: FinalAnswer
    leg: Leg

    @property
    def messages(self) -> list[Message]:
        """Every turn the run adds to the history."""
        return [*self.leg.prefix, *self.answer.messages]


@dataclass(frozen=True)
class Paused:
    request: InterruptRequest
    leg: Leg


@dataclass(frozen=True)
class Stopped:
    """The run cannot go on (an agent it needs is gone): ``text`` says why; ``messages`` are its turns so far."""

    text: str
    messages: list[Message]


LoopOutcome = Finished | Paused | Stopped


@dataclass(frozen=True)
class Resumption:
    """A paused run ready to go on: the leg it paused in, and its runner's resume with the human's resolution.

    :meth:`AgentLoop.drive` runs :meth:`step` (as it runs a new leg's ``run``)."""

    leg: Leg
    runner: Resumable
    state: dict[str, Any]
    resolution: Resolution

    def step(self) -> Awaitable[RunResult]:
        return self.runner.resume(self.leg.ctx, self.state, self.resolution)


class AgentLoop:
    """Drives one run through its legs (see the module docstring)."""

    def __init__(self, agents: AgentSource, ports: RunPorts, settings: LoopSettings) -> None:
        self.agents = agents
        self.ports = ports
        self.settings = settings
        self.leg: Leg
        """The leg the run is in now (set by :meth:`drive`): what a failure is reported against."""

    async def first_leg(self, agent: LoopAgent, message: Message) -> Leg | Stopped:
        """The leg a run starts with: ``agent``, or a graph's entry node."""
        if isinstance(agent.runner, GraphRunner):
            return await self.graph_leg(agent.runner, agent.runner.start(), message, [])
        ctx = await self.ports.context(agent, chain=[agent.name], handoff=None, query=message.text or "", graph=None)
        return Leg(agent, ctx, [agent.name], message)

    async def resume(self, state: RunState, resolution: Resolution) -> Resumption | Stopped:
        """Where a paused run goes on: the leg ``state`` paused in (its agent, handoffs and graph position),
        with its runner's resume of ``resolution``; :meth:`drive` it.  Stopped when the agent is gone or its
        runner cannot resume."""
        agent = self.agents.get(state.agent)
        runner = agent.runner if agent is not None else None
        if agent is None or not isinstance(runner, Resumable):
            reason = f"the agent {state.agent!r} is no longer available"
            return Stopped(f"⚠️ I cannot continue this request: {reason}.", [])
        chain, handoff, position = state.chain, state.handoff_context(), state.position()
        ctx = await self.ports.context(
            agent, chain=chain, handoff=handoff, query=state.query(), graph=position, resumed=True
        )
        leg = Leg(agent, ctx, chain, state.message(), state.prefix(), handoff, position)
        return Resumption(leg, runner, state.state, resolution)

    async def drive(
        self, leg: Leg, step: Callable[[], Awaitable[RunResult]], stream: AnswerStream | None = None
    ) -> LoopOutcome:
        """Run ``step`` (the leg's run or resume); follow handoffs and graph steps; check guardrails."""
        self.leg = leg
        leg.ctx.stream = stream
        result = await step()
        while True:
            while isinstance(result, HandoffRequest):
                handed = await self.hand_off(leg, result)
                if isinstance(handed, Stopped):
                    return handed
                leg = self.leg = handed
                leg.ctx.stream = stream
                result = await leg.agent.runner.run(leg.ctx, result.message)
            if not isinstance(result, FinalAnswer):
                return Paused(result, leg)
            if leg.agent.guardrails:
                result = await guard(leg, result)
            following = await self.graph_next(leg, result) if leg.graph is not None else None
            if isinstance(following, Stopped):
                return following
            if following is None or following.message is None:
                return Finished(result, leg)
            leg = self.leg = following
            result = await leg.agent.runner.run(leg.ctx, following.message)

    async def hand_off(self, leg: Leg, request: HandoffRequest) -> Leg | Stopped:
        """Continue the run with the handoff's target (the runner already checked whitelist, cycle, depth)."""
        target = self.agents.get(request.target)
        prefix = [*leg.prefix, *request.messages]
        if target is None:
            return Stopped(
                f"⚠️ {leg.agent.name} tried to hand off to {request.target!r}, which is not available.", prefix
            )
        entry = leg.agent.handoff_to(target.name)
        recent: list[str] = []
        if entry is not None and entry.include_context:
            seen = [*leg.ctx.history, request.message, *request.messages]
            recent = recent_lines(seen, self.settings.context_messages)
        chain = [*leg.chain, target.name]
        handoff = HandoffContext(
            source=leg.agent.name,
            target=target.name,
            reason=request.reason,
            summary=request.summary,
            context=request.context,
            chain=chain,
            correlation_id=leg.ctx.correlation_id,
            recent=recent,
            payload=request.payload,
        )
        leg.ctx.tracer.event(
            "handoff", agent=leg.agent.name, target=target.name, status="accepted", reason=request.reason,
            payload=request.payload,
        )  # fmt: skip
        template = self.settings.notify
        if template:
            line = template.replace("{from}", leg.agent.name).replace("{to}", target.name)
            await self.ports.notify(line.replace("{reason}", request.reason))
        ctx = await self.ports.context(
            target, chain=chain, handoff=handoff, query=request.message.text or "", graph=leg.graph
        )
        self.ports.handed_off(target.name)
        return Leg(target, ctx, chain, request.message, prefix, handoff, leg.graph)

    async def graph_leg(
        self, graph: GraphRunner, position: GraphPosition, message: Message, prefix: list[Message]
    ) -> Leg | Stopped:
        """The leg that runs ``position``'s node."""
        agent = self.agents.get(graph.agent_of(position.node))
        if agent is None:
            reason = f"the graph {graph.name}'s node {position.node!r} runs {graph.agent_of(position.node)!r}"
            return Stopped(f"⚠️ {reason}, which is not available.", prefix)
        ctx = await self.ports.context(
            agent, chain=[agent.name], handoff=None, query=message.text or "", graph=position
        )
        return Leg(agent, ctx, [agent.name], message, prefix, graph=position)

    async def graph_next(self, leg: Leg, answer: FinalAnswer) -> Leg | Stopped | None:
        """After a node answered: the leg of the next node, or None when the graph ends with this answer."""
        position = leg.graph
        assert position is not None and leg.message is not None
        graph = self.agents.get(position.graph)
        if graph is None or not isinstance(graph.runner, GraphRunner):
            return None
        following, when = graph.runner.after(position, answer.text)
        self.ports.trace("graph", leg.agent.name, graph=position.graph, node=position.node, to=following, when=when)
        if following == END:
            return None
        if graph.runner.capped(position):
            text = f"⚠️ {position.graph} stopped after {position.steps} steps (its max_steps); this is the last answer."
            await self.ports.notify(text)
            return None
        if self.settings.notify:
            await self.ports.notify(f"🧭 {position.graph}: {position.node} → {following}")
        step = GraphPosition(position.graph, following, position.state, position.steps + 1)
        return await self.graph_leg(graph.runner, step, leg.message, [*leg.prefix, *answer.messages])


async def guard(leg: Leg, answer: FinalAnswer) -> FinalAnswer:
    """Apply the agent's guardrails to its final answer."""
    if not leg.agent.guardrails:
        return answer
    earlier = list(answer.messages[:-1])
    conversation = [*leg.ctx.history, *([leg.message] if leg.message else []), *earlier]
    outcome = await enforce(
        leg.ctx,
        list(leg.agent.guardrails),
        agent=leg.agent.name,
        system=leg.ctx.system(leg.agent.system_prompt),
        conversation=conversation,
        answer=answer.text,
    )
    if outcome.status == "warned":
        log.warning("agent %s: answer failed guardrail %s: %s", leg.agent.name, outcome.guardrail, outcome.errors)
    if outcome.text == answer.text:
        return answer
    final = Message.assistant(outcome.text, agent=leg.agent.name)
    return answer.model_copy(update={"text": outcome.text, "messages": (*earlier, final)})


def run_state(leg: Leg, request: InterruptRequest) -> RunState:
    """What a pause stores: the runner's state and how the run got to this leg."""
    handed = None
    if leg.handoff is not None or leg.prefix:
        handed = HandedOver(
            context=leg.handoff.to_json() if leg.handoff is not None else None,
            messages=[m.model_dump(mode="json", exclude_defaults=True) for m in leg.prefix],
        )
    position = leg.graph
    return RunState(
        agent=leg.agent.name,
        runner=leg.agent.kind,
        phase=str(request.state.get("phase", request.kind)),
        state=request.state,
        handoff_chain=leg.chain,
        handoff=handed,
        graph=GraphAt(graph=position.graph, node=position.node, state=position.state, steps=position.steps)
        if position is not None
        else None,
    )


async def pause(leg: Leg, request: InterruptRequest, pauses: PausePort[T], human: HumanPort[T]) -> None:
    """Persist the pause (state, interrupt and prompt together), then ask the human."""
    pending = await pauses.persist_pause(run_state(leg, request), request, leg.agent)
    await human.ask(pending)
