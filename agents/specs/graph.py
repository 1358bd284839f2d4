"""The ``graph:`` block of an agent file: nodes (each runs an agent), where their answers go in the state, edges with
conditions, an entry and a step cap. Checked at load: the entry and every edge name a node (or ``END``), every node
can be reached, every condition parses and reads only state keys, all with a did-you-mean (and, once every agent is
loaded, to the leaf against the node agents' guardrail schemas: :func:`agents.specs.registry.check_references`)."""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from agents.conditions import Condition, ConditionError, parse_condition

END = "END"
NodeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,47}$")]


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class GraphEdge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True)

    source: NodeName = Field(alias="from")
    """The node this edge leaves."""
    to: NodeName
    """The next node, or ``END``."""
    when: str = ""
    """A condition over the state (``analysis.can_auto_fix``, ``review.verdict == 'changes'``); empty: always."""

    def condition(self) -> Condition | None:
        return parse_condition(self.when) if self.when.strip() else None


class GraphSpec(BaseModel):
    """Agents run one after another: each node's answer (its JSON, when it answers in JSON) goes into the state
    under the node's name (or its ``outputs`` key); a node's edges are tried in order and the first whose condition
    holds is taken; none, or ``END``, ends the graph with the last answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    entry: NodeName
    """The node that runs first."""
    nodes: dict[NodeName, str]
    """Node name → the agent it runs (a built-in or a file agent)."""
    outputs: dict[NodeName, NodeName] = {}
    """Node name → the state key its answer goes under, when not the node's own name (the design's
    ``analyzer`` → ``analysis``, so an edge reads ``analysis.can_auto_fix``)."""
    edges: tuple[GraphEdge, ...] = ()
    max_steps: int = Field(10, ge=1, le=100)
    """At most this many node runs per request (cycles end here)."""

    @model_validator(mode="after")
    def _consistent(self) -> GraphSpec:
        names = sorted(self.nodes)
        if not names:
            raise ValueError("nodes: a graph needs at least one node")
        if END in self.nodes:
            raise ValueError(f"nodes: {END} is where a graph ends; it cannot be a node")
        if self.entry not in self.nodes:
            raise ValueError(f"entry: {self.entry!r} is not a node{_did_you_mean(self.entry, names)}")
        for node, key in self.outputs.items():
            if node not in self.nodes:
                raise ValueError(f"outputs: {node!r} is not a node{_did_you_mean(node, names)}")
            if key == END:
                raise ValueError(f"outputs.{node}: {END} is where a graph ends; it cannot be a state key")
        keys = self.state_keys()
        for i, edge in enumerate(self.edges):
            where = f"edges[{i}]"
            if edge.source not in self.nodes:
                raise ValueError(f"{where}.from: {edge.source!r} is not a node{_did_you_mean(edge.source, names)}")
            if edge.to != END and edge.to not in self.nodes:
                raise ValueError(f"{where}.to: {edge.to!r} is not a node or END{_did_you_mean(edge.to, [*names, END])}")
            try:
                condition = edge.condition()
            except ConditionError as exc:
                raise ValueError(f"{where}.when: {exc}") from None
            for name in sorted(condition.names() - set(keys)) if condition else ():
                kept = f" ({name!r} keeps its answer as {self.key_of(name)!r})" if name in self.nodes else ""
                what = "not a node" if not self.outputs else f"not in the state ({', '.join(sorted(keys))})"
                raise ValueError(
                    f"{where}.when: `{condition}` reads {name!r}, which is {what}{kept}"
                    f"{_did_you_mean(name, sorted(keys))}"
                )
        reached, todo = {self.entry}, [self.entry]
        while todo:
            node = todo.pop()
            for edge in self.edges:
                if edge.source == node and edge.to != END and edge.to not in reached:
                    reached.add(edge.to)
                    todo.append(edge.to)
        unreachable = [n for n in names if n not in reached]
        if unreachable:
            raise ValueError(f"nodes: {', '.join(unreachable)} cannot be reached from the entry {self.entry!r}")
        return self

    def key_of(self, node: str) -> str:
        """The state key ``node``'s answer goes under."""
        return self.outputs.get(node, node)

    def state_keys(self) -> dict[str, list[str]]:
        """State key → the nodes that write it."""
        keys: dict[str, list[str]] = {}
        for node in self.nodes:
            keys.setdefault(self.key_of(node), []).append(node)
        return keys

    def mermaid(self) -> str:
        """The graph as a Mermaid flowchart (``bot agents graph show --mermaid``)."""
        lines = ["flowchart TD", f"    START((start)) --> {self.entry}"]
        kept = {node: f" → {key}" for node, key in self.outputs.items() if key != node}
        lines += [f'    {node}["{node}: {agent}{kept.get(node, "")}"]' for node, agent in self.nodes.items()]
        for edge in self.edges:
            target = "END((end))" if edge.to == END else edge.to
            words = edge.when.replace("|", "/").replace('"', "'")
            label = f"|{words}|" if edge.when else ""
            lines.append(f"    {edge.source} -->{label} {target}")
        return "\n".join(lines)


def next_node(spec: GraphSpec, conditions: dict[int, Condition | None], node: str, state: dict[str, Any]) -> str:
    """The node after ``node`` for ``state``: the first of its edges whose condition holds (``END`` if none)."""
    for i, edge in enumerate(spec.edges):
        if edge.source != node:
            continue
        condition = conditions.get(i)
        if condition is None or condition.holds(state):
            return edge.to
    return END
