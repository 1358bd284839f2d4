"""What a run is in: the agent now answering (after handoffs, or a graph's node), and the turns it may see."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.context import RunContext
from agents.graph import GraphPosition
from agents.guardrails import enforce
from agents.handoffs import HandoffContext
from agents.messages import Message, ToolCall
from agents.results import FinalAnswer, InterruptRequest
from agents.tools.base import RISK_ORDER, Tool
from bot.interrupts.text import tool_confirm_choices
from bot.runs.catalog import AgentDef

log = logging.getLogger(__name__)


@dataclass
class Leg:
    """The agent a run is in now: after handoffs, the last one of ``chain``."""

    agent: AgentDef
    ctx: RunContext
    chain: list[str]
    message: Message | None = None
    """The user message the run started from."""
    prefix: list[Message] = field(default_factory=list)
    """Turns of the agents that handed off (or of a graph's earlier nodes), stored before this agent's own."""
    handoff: HandoffContext | None = None
    graph: GraphPosition | None = None
    """Inside a graph: the node this agent runs and the state so far."""


def own_turns(messages: list[Message], agent: str) -> list[Message]:
    """The turns of ``messages`` an agent answered: each user message with the replies that followed it."""
    out: list[Message] = []
    turn: list[Message] = []
    for message in [*messages, Message.user("")]:
        if message.role == "user" and turn and turn[-1].role != "user":
            if any(m.agent == agent for m in turn if m.role != "user"):
                out.extend(turn)
            turn = []
        turn.append(message)
    return out


async def guard(leg: Leg, answer: FinalAnswer) -> FinalAnswer:
    """Apply the agent's guardrails to its final answer."""
    if not leg.agent.guardrails:
        return answer
    earlier = list(answer.messages[:-1])
    conversation = [*leg.ctx.history, *([leg.message] if leg.message else []), *earlier]
    outcome = await enforce(
        leg.ctx,
        leg.agent.guardrails,
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


NEVER_GRANTED = frozenset({"run_command"})
"""Tools asked about every time, whatever the chat granted."""


def confirmation_rule(agent: AgentDef, grants: set[str]) -> Callable[[Tool, ToolCall], bool]:
    """Whether a call of ``agent`` waits for a person's yes (``grants``: the tools the chat always allows)."""

    def needs_confirmation(tool: Tool, call: ToolCall) -> bool:
        if tool.name in NEVER_GRANTED:
            return True
        if tool.name in grants:
            return False
        return tool.confirm or RISK_ORDER[tool.risk] >= RISK_ORDER["high"] or agent.confirms(tool.name)

    return needs_confirmation


def prompt_choices(request: InterruptRequest) -> list[tuple[str, str]]:
    """The buttons of a pause's prompt (a tool confirmation offers "always" only for tools that can be granted)."""
    if request.kind == "tool_confirm":
        calls = list(request.payload.get("calls", []))
        names = sorted({c["name"] for c in calls} - NEVER_GRANTED)
        grantable = names if len(names) == len({c["name"] for c in calls}) else []
        return tool_confirm_choices(calls, grantable)
    return [(c.label, c.value) for c in request.choices]
