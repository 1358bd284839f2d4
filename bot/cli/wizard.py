"""``bot agents create --extended``: an agent file with triggers, handoffs, a guardrail, memory and a graph, from
questions (at a terminal) or flags (in scripts); what is asked and what a flag gives are the same fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import typer
import yaml


def _split(text: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


@dataclass
class Answers:
    """What the wizard asks (every field has a flag of ``create``)."""

    description: str = ""
    runner: str = "react"
    keywords: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    handoffs: list[str] = field(default_factory=list)
    """``to`` or ``to:when``."""
    guardrail_fields: list[str] = field(default_factory=list)
    """Fields the answer (JSON) must have: a ``reject``-with-repair guardrail."""
    session_keys: list[str] = field(default_factory=list)
    long_term: bool = True
    nodes: list[str] = field(default_factory=list)
    """``node=agent``."""
    edges: list[str] = field(default_factory=list)
    """``from>to`` or ``from>to:when``."""
    entry: str = ""
    trace_rate: float = 1.0
    """The share of requests whose work of this agent is traced (its file's ``tracing.sample_rate``)."""
    prompt: str = ""

    def ask(self) -> None:
        """Fill in what the flags left out, at a terminal."""
        self.description = self.description or typer.prompt("What is it for (one line)", default="An assistant.")
        self.runner = typer.prompt("Runner: chat, react, plan or graph", default=self.runner)
        if not self.keywords:
            self.keywords = _split(typer.prompt("Trigger keywords (comma-separated, empty: none)", default=""))
        if not self.patterns:
            self.patterns = _split(typer.prompt("Trigger patterns (regular expressions, ;-separated)", default=""), ";")
        if self.runner == "graph":
            if not self.nodes:
                self.nodes = _split(typer.prompt("Nodes as node=agent (comma-separated)"))
            if not self.edges:
                self.edges = _split(typer.prompt("Edges as from>to[:condition] (;-separated; to END ends)"), ";")
            self.entry = self.entry or typer.prompt("Entry node", default=self.nodes[0].split("=")[0])
        else:
            if not self.handoffs:
                self.handoffs = _split(typer.prompt("Hands off to (agent[:condition], ;-separated)", default=""), ";")
            if not self.guardrail_fields:
                fields = typer.prompt("Answer in JSON with the fields (comma-separated, empty: free text)", default="")
                self.guardrail_fields = _split(fields)
        if not self.session_keys:
            self.session_keys = _split(typer.prompt("Session memory keys (comma-separated)", default=""))
        self.long_term = typer.confirm("Remember facts about people (long-term memory)?", default=self.long_term)
        self.trace_rate = typer.prompt("Share of requests traced (0 to 1)", default=self.trace_rate, type=float)

    def front(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "agent",
            "name": name,
            "title": name.replace("-", " ").capitalize(),
            "description": self.description or "An assistant.",
            "version": "1",
            "runner": self.runner,
        }
        if self.keywords or self.patterns:
            data["triggers"] = {"keywords": self.keywords, "patterns": self.patterns, "priority": 60}
        if self.handoffs:
            data["handoffs"] = [_handoff(h) for h in self.handoffs]
        if self.guardrail_fields:
            data["guardrails"] = [
                {
                    "name": "shape",
                    "policy": "repair",
                    "max_repairs": 1,
                    "output_schema": {"type": "object", "required": self.guardrail_fields},
                }
            ]
        if self.session_keys or not self.long_term:
            data["memory"] = {"session": self.session_keys, "long_term": self.long_term}
        if self.trace_rate < 1:
            data["tracing"] = {"sample_rate": self.trace_rate}
        if self.runner == "graph":
            nodes = dict(part.split("=", 1) for part in self.nodes if "=" in part)
            data["graph"] = {
                "entry": self.entry or next(iter(nodes), ""),
                "nodes": {k.strip(): v.strip() for k, v in nodes.items()},
                "edges": [_edge(e) for e in self.edges],
            }
        return data

    def text(self, name: str) -> str:
        front = yaml.safe_dump(self.front(name), sort_keys=False, allow_unicode=True, width=1000)
        prompt = self.prompt or f"You are {name}: {self.description or 'an assistant'}. Answer in the user's language."
        return f"---\n{front}---\n{prompt}\n"


def _handoff(text: str) -> dict[str, Any]:
    to, _, when = text.partition(":")
    return {"to": to.strip(), **({"when": when.strip()} if when.strip() else {})}


def _edge(text: str) -> dict[str, Any]:
    route, _, when = text.partition(":")
    source, _, target = route.partition(">")
    return {"from": source.strip(), "to": target.strip(), **({"when": when.strip()} if when.strip() else {})}
