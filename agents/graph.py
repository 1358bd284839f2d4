"""A graph of agents (``runner: graph``): the gateway runs its nodes one after another.

The runner holds the parsed graph; the gateway's run manager runs each node's agent like any agent (tools,
confirmations, handoffs, guardrails, pauses that survive restarts) and asks :meth:`GraphRunner.after` where
to go next with the node's answer. A node's answer is parsed as JSON (a fenced block is fine); an object goes
into the state under the node's name (or its ``outputs`` key), anything else as ``{"answer": text}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agents.conditions import Condition
from agents.context import RunContext
from agents.messages import Message
from agents.results import RunResult
from agents.specs.graph import END, GraphSpec, next_node

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n```\s*$", re.DOTALL)


def node_output(text: str) -> dict[str, Any]:
    """What a node's answer puts into the state."""
    match = _FENCE.match(text)
    try:
        value = json.loads(match.group(1) if match else text)
    except (json.JSONDecodeError, TypeError):
        return {"answer": text}
    return value if isinstance(value, dict) else {"answer": text}


@dataclass
class GraphPosition:
    """Where a graph run is: its node, the state so far, the node runs made (kept in the checkpoint)."""

    graph: str
    node: str
    state: dict[str, Any] = field(default_factory=dict)
    steps: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.graph, "node": self.node, "state": self.state, "steps": self.steps}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphPosition:
        return cls(str(data["graph"]), str(data["node"]), dict(data.get("state") or {}), int(data.get("steps", 1)))

    def brief(self) -> str:
        """What a node's agent is told (its system prompt): the graph, its node, the state so far."""
        state = json.dumps(self.state, ensure_ascii=False, default=str)
        return (
            f"## Graph {self.graph}\nYou are its node {self.node!r}. State so far (earlier nodes' results): {state}\n"
            "Answer with your result; JSON when your instructions ask for it (the next step reads it)."
        )


class GraphRunner:
    """The parsed graph of an agent file (``graph:``); see the module docstring."""

    def __init__(self, name: str, spec: GraphSpec) -> None:
        self.name = name
        self.spec = spec
        self.system_prompt = ""
        self.conditions: dict[int, Condition | None] = {i: e.condition() for i, e in enumerate(spec.edges)}

    def start(self) -> GraphPosition:
        return GraphPosition(self.name, self.spec.entry)

    def agent_of(self, node: str) -> str:
        return self.spec.nodes[node]

    def after(self, position: GraphPosition, answer: str) -> tuple[str, str]:
        """Record ``answer`` as the node's result; the next node (or ``END``) and the condition that chose it."""
        position.state[self.spec.key_of(position.node)] = node_output(answer)
        following = next_node(self.spec, self.conditions, position.node, position.state)
        edge = next(
            (e for e in self.spec.edges if e.source == position.node and e.to == following),
            None,
        )
        return following, edge.when if edge is not None else ""

    def capped(self, position: GraphPosition) -> bool:
        return position.steps >= self.spec.max_steps

    async def run(self, ctx: RunContext, message: Message) -> RunResult:
        raise RuntimeError(f"the graph {self.name} is run by the gateway, node by node")


__all__ = ["END", "GraphPosition", "GraphRunner", "node_output"]
