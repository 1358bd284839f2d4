"""``bot agents create --extended``: an agent file with every P2 field (triggers with their priority, handoffs with a
condition and a payload schema, a guardrail with its schema and policy, session keys and long-term memory, a graph
with its state keys, tracing), from questions (at a terminal) or flags (in scripts); what is asked and what a flag
gives are the same fields.  At a terminal each part is checked as it is answered and asked again with the reason
(``task.status`` read by a condition whose payload has no ``task``); with flags a file that would not load is not
written."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import typer
import yaml
from pydantic import ValidationError

ACRONYMS = frozenset("SQL API CI CD PR UI UX DB AWS GCP K8S HTTP JSON YAML CSV PDF SEO QA DNS SSH".split())
"""Words an agent's title keeps upper-case (``sql-helper``: "SQL helper")."""
PLACEHOLDER_DESCRIPTION = "An assistant."
"""The description of an agent file written without one: it says nothing routing could find the agent by."""
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
TRACE_EVENTS = ("llm_call", "tool_call", "handoff", "guardrail", "interrupt", "memory", "summary", "graph")


def title_of(name: str) -> str:
    """A title from a kebab-case name: the first word capitalised, known acronyms upper-case, the rest as written
    (``sql-helper``: "SQL helper", ``release-manager``: "Release manager", ``ci-cd-bot``: "CI CD bot")."""
    words = [word.upper() if word.upper() in ACRONYMS else word for word in name.split("-") if word]
    if words and words[0].upper() not in ACRONYMS:
        words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words)


def sentence(text: str) -> str:
    """``text`` ending in exactly one period ("Finds slow queries." and "Finds slow queries" alike); "" for none."""
    text = text.strip().rstrip(". ")
    return f"{text}." if text else ""


def _split(text: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


def schema_of(text: str) -> dict[str, Any]:
    """A JSON schema from what a person types: a schema (it has a ``type``), an example value
    (``{"files": [], "changes": ""}``: an object of an array and a string), or field names (``verdict, summary``:
    an object that must have them)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        if text.strip().startswith(("{", "[")):
            raise ValueError(f"not JSON: {text.strip()[:60]}") from None
        return {"type": "object", "required": _split(text)}
    if isinstance(value, dict) and (value.get("type") in JSON_TYPES or "properties" in value):
        return value
    return _example(value)


def _example(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"type": "object", "properties": {str(k): _example(v) for k, v in value.items()}}
    if isinstance(value, list):
        return {"type": "array", **({"items": _example(value[0])} if value else {})}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    return {"type": "string"} if isinstance(value, str) else {}


def _problem(exc: ValidationError | ValueError) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors():
            where = ".".join(map(str, error["loc"]))
            message = str(error["msg"]).removeprefix("Value error, ")
            parts.append(f"{where}: {message}" if where else message)
        return "; ".join(parts)
    return str(exc)


def _until_valid(ask: Callable[[], Any], check: Callable[[Any], Any]) -> Any:
    """Ask until ``check`` takes the answer (it raises ValueError or ValidationError with the reason)."""
    while True:
        answer = ask()
        try:
            check(answer)
        except (ValueError, ValidationError) as exc:
            typer.echo(f"  ✗ {_problem(exc)}")
            continue
        return answer


@dataclass
class Answers:
    """What the wizard asks (every field has a flag of ``create``)."""

    description: str = ""
    examples: list[str] = field(default_factory=list)
    """Sample requests in the users' words: routing compares every message with them by meaning."""
    runner: str = "react"
    keywords: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    priority: int = 50
    """0-100: when two agents fit a message about equally, the higher wins; without the sentence encoder, at
    ``routing.rule.strong_priority`` (80) one matching trigger takes a message."""
    handoffs: list[str] = field(default_factory=list)
    """``to`` or ``to:when``."""
    payloads: dict[str, str] = field(default_factory=dict)
    """Handoff target → its payload: a JSON schema, an example object or field names (see :func:`schema_of`)."""
    guardrail_fields: list[str] = field(default_factory=list)
    """Fields the answer (JSON) must have."""
    guardrail_schema: str = ""
    """The answer's JSON schema (or an example of it), as typed."""
    guardrail_policy: str = "repair"
    session_keys: list[str] = field(default_factory=list)
    long_term: bool = True
    nodes: list[str] = field(default_factory=list)
    """``node=agent``."""
    outputs: list[str] = field(default_factory=list)
    """``node=key``: the state key a node's answer goes under (default: the node's name)."""
    edges: list[str] = field(default_factory=list)
    """``from>to`` or ``from>to:when``."""
    entry: str = ""
    trace_rate: float = 1.0
    """The share of requests whose work of this agent is traced (its file's ``tracing.sample_rate``)."""
    trace_events: list[str] = field(default_factory=list)
    """The kinds of its events kept (empty: all)."""
    prompt: str = ""

    def ask(self) -> None:
        """Fill in what the flags left out, at a terminal, checking each part as it comes."""
        self.description = self.description or typer.prompt(
            "What is it for (one line)", default=PLACEHOLDER_DESCRIPTION
        )
        if not self.examples:
            self.examples = _split(
                typer.prompt("Sample requests in your users' words (5-10, ;-separated; empty: none)", default=""), ";"
            )
        self.runner = typer.prompt("Runner: chat, react, plan or graph", default=self.runner)
        typer.echo("🎯 Triggers (auto-routing)")
        if not self.keywords:
            self.keywords = _split(typer.prompt("Trigger keywords (comma-separated, empty: none)", default=""))
        if not self.patterns:
            self.patterns = _split(typer.prompt("Trigger patterns (regular expressions, ;-separated)", default=""), ";")
        if self.keywords or self.patterns:
            self.priority = typer.prompt(
                "Priority 0-100 (80 or more: one matching trigger takes a message)", default=self.priority, type=int
            )
        if self.runner == "graph":
            self._ask_graph()
        else:
            self._ask_handoffs()
            self._ask_guardrail()
        typer.echo("💾 Memory")
        if not self.session_keys:
            self.session_keys = _split(typer.prompt("Session memory keys (comma-separated)", default=""))
        self.long_term = typer.confirm("Remember facts about people (long-term memory)?", default=self.long_term)
        typer.echo("🔍 Tracing")
        self.trace_rate = typer.prompt("Share of requests traced (0 to 1)", default=self.trace_rate, type=float)
        if not self.trace_events:
            self.trace_events = _until_valid(
                lambda: _split(typer.prompt(f"Events to trace ({', '.join(TRACE_EVENTS)}; empty: all)", default="")),
                _known_events,
            )

    def _ask_handoffs(self) -> None:
        typer.echo("🔄 Handoffs")
        if self.handoffs:
            return
        while True:
            target = typer.prompt("Hand off to (an agent; empty: no more)", default="").strip()
            if not target:
                return

            def one(target: str = target) -> tuple[str, str]:
                when = typer.prompt(
                    "  When (a condition over the payload, e.g. task.status == 'need-review'; or words; empty: any)",
                    default="",
                ).strip()
                from agents.conditions import as_condition

                needed = as_condition(when) is not None
                hint = "a JSON schema, an example object or field names" + ("" if needed else "; empty: none")
                payload = typer.prompt(f"  Payload ({hint})", default="" if not needed else None)
                return when, payload or ""

            def check(answer: tuple[str, str], target: str = target) -> None:
                self._handoff(f"{target}:{answer[0]}", answer[1])

            when, payload = _until_valid(one, check)
            self.handoffs.append(f"{target}:{when}" if when else target)
            if payload:
                self.payloads[target] = payload

    def _ask_guardrail(self) -> None:
        typer.echo("🛡️ Guardrail")
        if self.guardrail_fields or self.guardrail_schema:
            return
        schema = _until_valid(
            lambda: typer.prompt(
                "Answer in JSON of (a JSON schema, an example object or field names; empty: free text)", default=""
            ),
            lambda text: text and schema_of(text),
        )
        if schema:
            self.guardrail_schema = schema
            self.guardrail_policy = _until_valid(
                lambda: typer.prompt(
                    "  Policy: reject, repair (ask again with the errors) or warn", default=self.guardrail_policy
                ).strip(),
                _policy,
            )

    def _ask_graph(self) -> None:
        typer.echo("📊 Graph")
        if not self.nodes:
            self.nodes = _split(typer.prompt("Nodes as node=agent (comma-separated)"))
        self.outputs = self.outputs or _split(
            typer.prompt("State keys of node answers as node=key (comma-separated; empty: the node names)", default="")
        )
        if not self.edges:
            self.edges = _until_valid(
                lambda: _split(typer.prompt("Edges as from>to[:condition] (;-separated; to END ends)"), ";"),
                lambda edges: self._graph(edges),
            )
        self.entry = self.entry or typer.prompt("Entry node", default=self.nodes[0].split("=")[0])

    # -- the front matter ------------------------------------------------------------------------------

    def _handoff(self, text: str, payload: str) -> dict[str, Any]:
        to, _, when = text.partition(":")
        entry: dict[str, Any] = {"to": to.strip(), **({"when": when.strip()} if when.strip() else {})}
        if payload.strip():
            entry["payload"] = {"schema": schema_of(payload)}
        from agents.specs.model import Handoff

        Handoff.model_validate(entry)
        return entry

    def _guardrail(self) -> dict[str, Any] | None:
        if not (self.guardrail_fields or self.guardrail_schema):
            return None
        schema = schema_of(self.guardrail_schema) if self.guardrail_schema else {"type": "object"}
        if self.guardrail_fields:
            schema = {**schema, "required": [*schema.get("required", []), *self.guardrail_fields]}
        rule = {"name": "valid-json-output", "policy": self.guardrail_policy, "max_repairs": 1, "output_schema": schema}
        from agents.specs.model import Guardrail

        Guardrail.model_validate(rule)
        return rule

    def _graph(self, edges: list[str]) -> dict[str, Any]:
        nodes = dict(part.split("=", 1) for part in self.nodes if "=" in part)
        outputs = dict(part.split("=", 1) for part in self.outputs if "=" in part)
        graph: dict[str, Any] = {
            "entry": self.entry or next(iter(nodes), ""),
            "nodes": {k.strip(): v.strip() for k, v in nodes.items()},
            **({"outputs": {k.strip(): v.strip() for k, v in outputs.items()}} if outputs else {}),
            "edges": [_edge(e) for e in edges],
        }
        from agents.specs.graph import GraphSpec

        GraphSpec.model_validate(graph)
        return graph

    def front(self, name: str) -> dict[str, Any]:
        """The front matter (raises ValueError or ValidationError with the reason when a part does not fit)."""
        data: dict[str, Any] = {
            "kind": "agent",
            "name": name,
            "title": title_of(name),
            "description": self.description or PLACEHOLDER_DESCRIPTION,
            **({"examples": self.examples} if self.examples else {}),
            "version": "1",
            "runner": self.runner,
        }
        if self.keywords or self.patterns:
            data["triggers"] = {"keywords": self.keywords, "patterns": self.patterns, "priority": self.priority}
        targets = [h.partition(":")[0].strip() for h in self.handoffs]
        for target in sorted(set(self.payloads) - set(targets)):
            raise ValueError(f"--payload {target}=…: {target!r} is not among the handoffs")
        if self.handoffs:
            pairs = zip(self.handoffs, targets, strict=True)
            data["handoffs"] = [self._handoff(handoff, self.payloads.get(to, "")) for handoff, to in pairs]
        guardrail = self._guardrail()
        if guardrail is not None:
            data["guardrails"] = [guardrail]
        if self.session_keys or not self.long_term:
            data["memory"] = {"session": self.session_keys, "long_term": self.long_term}
        if self.trace_rate < 1 or self.trace_events:
            data["tracing"] = {
                **({"sample_rate": self.trace_rate} if self.trace_rate < 1 else {}),
                **({"events": self.trace_events} if self.trace_events else {}),
            }
        if self.runner == "graph":
            data["graph"] = self._graph(self.edges)
        return data

    def text(self, name: str) -> str:
        front = yaml.safe_dump(self.front(name), sort_keys=False, allow_unicode=True, width=1000)
        what = sentence(self.description) or "an assistant."
        prompt = self.prompt or f"You are {name}: {what} Answer in the user's language."
        return f"---\n{front}---\n{prompt}\n"


def _policy(policy: str) -> None:
    if policy not in ("reject", "repair", "warn"):
        raise ValueError(f"{policy!r} is not a policy: reject, repair or warn")


def _known_events(kinds: list[str]) -> None:
    unknown = [kind for kind in kinds if kind not in TRACE_EVENTS]
    if unknown:
        raise ValueError(f"unknown events {', '.join(unknown)}: use {', '.join(TRACE_EVENTS)}")


def _edge(text: str) -> dict[str, Any]:
    route, _, when = text.partition(":")
    source, _, target = route.partition(">")
    return {"from": source.strip(), "to": target.strip(), **({"when": when.strip()} if when.strip() else {})}
