"""The ``graph:`` block of an agent file: nodes (each runs an agent), edges with conditions, an entry and a step
cap. Checked at load: the entry and every edge name a node (or ``END``), every node can be reached, every
condition parses and reads only node names, all with a did-you-mean."""

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
    under the node's name; a node's edges are tried in order and the first whose condition holds is taken; none,
    or ``END``, ends the graph with the last answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    entry: NodeName
    """The node that runs first."""
    nodes: dict[NodeName, str]
    """Node name → the agent it runs (a built-in or a file agent)."""
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
            for name in sorted(condition.names() - set(self.nodes)) if condition else ():
                raise ValueError(
                    f"{where}.when: `{condition}` reads {name!r}, which is not a node{_did_you_mean(name, names)}"
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

    def mermaid(self) -> str:
        """The graph as a Mermaid flowchart (``bot agents graph show --mermaid``)."""
        lines = ["flowchart TD", f"    START((start)) --> {self.entry}"]
        lines += [f'    {node}["{node}: {agent}"]' for node, agent in self.nodes.items()]
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
