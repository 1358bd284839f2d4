"""Replaying a finished request from its trace: every agent, model call, tool call (input and output), handoff (reason
and payload), guardrail (violations, policy, repair) and pause in order, with what each took, then the totals
(``bot agents replay``); each step shown through :mod:`bot.tracing.steps`.

It reads only trace events (what ``tracing.events`` and ``tracing.sample_rate`` kept), so it shows what
happened without running anything again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.tracing.event import TraceEvent
from bot.tracing.steps import human_duration, lines, step_of
from bot.tracing.timeline import agents_of


@dataclass
class Totals:
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    model_ms: float = 0.0
    tool_calls: int = 0
    tool_errors: int = 0
    tool_ms: float = 0.0
    handoffs: int = 0
    refused_handoffs: int = 0
    guardrails: int = 0
    interrupts: int = 0
    errors: int = 0
    status: str = ""
    agents: list[str] = field(default_factory=list)

    def add(self, event: TraceEvent) -> None:
        d = event.data
        if event.type == "llm_call":
            self.model_calls += 1
            self.input_tokens += int(d.get("input_tokens") or 0)
            self.output_tokens += int(d.get("output_tokens") or 0)
            self.thinking_tokens += int(d.get("thinking_tokens") or 0)
            self.model_ms += float(d.get("duration_ms") or 0)
        elif event.type == "tool_call":
            self.tool_calls += 1
            self.tool_errors += 1 if d.get("error") else 0
            self.tool_ms += float(d.get("duration_ms") or 0)
        elif event.type == "handoff":
            accepted = d.get("status") == "accepted"
            self.handoffs += accepted
            self.refused_handoffs += not accepted
        elif event.type == "guardrail":
            self.guardrails += 1
        elif event.type == "interrupt" and d.get("status") == "raised":
            self.interrupts += 1
        elif event.type == "error":
            self.errors += 1
        elif event.type == "run":
            self.status = str(d.get("status") or "")

    def lines(self, wall_ms: float) -> list[str]:
        thinking = f", {self.thinking_tokens:,} thinking" if self.thinking_tokens else ""
        tools = f"{self.tool_calls} tool calls ({self.tool_errors} failed, {human_duration(self.tool_ms)})"
        handoffs = f"{self.handoffs} handoffs" + (
            f" ({self.refused_handoffs} refused)" if self.refused_handoffs else ""
        )
        return [
            "Agents: " + (" → ".join(self.agents) or "none"),
            f"Model: {self.model_calls} calls, {self.input_tokens:,} tokens in, {self.output_tokens:,} out{thinking}, "
            f"{human_duration(self.model_ms)}",
            f"Tools: {tools}; {handoffs}; {self.guardrails} guardrail checks; {self.interrupts} pauses; "
            f"{self.errors} errors",
            f"Status: {self.status or 'unfinished'} after {human_duration(wall_ms)}",
        ]


def detail(event: TraceEvent) -> str:
    """What the one-line step leaves out and a replay shows, a line per field: a tool's input and output, a
    handoff's reason and payload, a guardrail's policy, violations and repair, a model's tokens."""
    return "\n".join(lines(step_of(event), indent="")[1:])


def replay(events: Sequence[TraceEvent]) -> str:
    """The request of ``events`` (one correlation id), step by step, with totals."""
    if not events:
        return "Nothing to replay: no trace events."
    start, end = events[0].at, events[-1].at
    totals = Totals()
    head = f"▶ {events[0].correlation_id} in {events[0].chat_key}, {start:%Y-%m-%d %H:%M:%S} UTC"
    out = [head]
    totals.agents = agents_of(events)
    for event in events:
        totals.add(event)
        offset = (event.at - start).total_seconds() * 1000
        first, *more = lines(step_of(event), indent=" " * 13)
        out += [f"+{human_duration(offset):>8}  {first}", *more]
    return "\n".join([*out, *totals.lines((end - start).total_seconds() * 1000)])


def replay_json(events: Sequence[TraceEvent]) -> dict[str, Any]:
    """The same as data: the events and the totals."""
    totals = Totals(agents=agents_of(events))
    for event in events:
        totals.add(event)
    wall = (events[-1].at - events[0].at).total_seconds() * 1000 if events else 0.0
    return {"events": [e.as_dict() for e in events], "totals": {**totals.__dict__, "duration_ms": round(wall, 3)}}
