"""Trace events as people read them: one line per event (``describe``) and a request's timeline (``/trace``,
``bot trace``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.tracing.event import TraceEvent


def human_duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def describe(event: TraceEvent) -> str:
    d = event.data
    took = f", {human_duration(float(d['duration_ms']))}" if "duration_ms" in d else ""
    if event.type == "route":
        return f"🎯 route → {event.agent or 'nobody'} ({d.get('method')}, {d.get('confidence', 0):.0f} %)"
    if event.type == "llm_call":
        tokens = f"{d.get('input_tokens', 0)}→{d.get('output_tokens', 0)} tokens"
        return f"🧠 {event.agent}: {d.get('model', 'model')} {tokens}{took}"
    if event.type == "tool_call":
        error = " ⚠️ error" if d.get("error") else ""
        return f"🔧 {event.agent}: {d.get('tool')} ({d.get('result_size', 0)} chars{took}){error}"
    if event.type == "handoff":
        verb = "→" if d.get("status") == "accepted" else "⛔ refused →"
        return f"🔀 {event.agent} {verb} {d.get('target')}: {d.get('reason', '')}"
    if event.type == "guardrail":
        return f"🛡 {event.agent}: {d.get('guardrail')} {d.get('status')}"
    if event.type == "interrupt":
        who = f" by {d['by']}" if d.get("by") else ""
        return f"⏸ {d.get('kind')} {d.get('status')}{who}"
    if event.type == "error":
        return f"⚠️ {event.agent}: {d.get('message', '')}"
    if event.type == "run":
        return f"🏁 {event.agent}: {d.get('status')}"
    if event.type == "memory":
        return f"📝 {event.agent}: {_memory(d)}"
    if event.type == "graph":
        when = f" ({d['when']})" if d.get("when") else ""
        return f"🧭 {d.get('graph')}: {d.get('node')} → {d.get('to')}{when}"
    if event.type == "summary":
        size = f"{d.get('summary_chars')} chars{took}"
        return f"📝 {d.get('messages')} older messages summarised by {d.get('by')} ({size})"
    return f"{event.type} {event.agent}"


def _memory(d: dict[str, Any]) -> str:
    """What a run was told besides its history: memories (ids and tokens, never their text), the summary,
    session keys."""
    parts = []
    if d.get("recalled"):
        ids = ", ".join(f"#{i}" for i in d["recalled"][:10]) + (" …" if len(d["recalled"]) > 10 else "")
        parts.append(f"recalled {ids} ({d.get('tokens', 0)}/{d.get('budget', 0)} tokens)")
    if d.get("summary_chars"):
        parts.append(f"summary {d['summary_chars']} chars")
    if isinstance(d.get("session"), dict):
        shown = "; ".join(f"{k}={shorten(str(v)) if v else '(not set)'}" for k, v in d["session"].items())
        parts.append(f"session: {shown}")
    return ", ".join(parts) or "nothing recalled"


def shorten(text: str, limit: int = 60) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def agents_of(events: Sequence[TraceEvent]) -> list[str]:
    """The agents that worked on a request, in order: not the route, not the run's own bookkeeping (its end and
    the resolution of a pause name the run's agent: a graph's, while its nodes did the work)."""
    chain: list[str] = []
    for e in events:
        bookkeeping = e.type in ("route", "run") or (e.type == "interrupt" and e.data.get("status") != "raised")
        if e.agent and not bookkeeping and (not chain or chain[-1] != e.agent):
            chain.append(e.agent)
    return chain


def timeline(events: Sequence[TraceEvent]) -> str:
    """A short, human-readable timeline of one request."""
    if not events:
        return "No trace yet: send a request first."
    start = events[0].at
    chain = agents_of(events)
    total = (events[-1].at - start).total_seconds() * 1000
    head = f"🧭 Trace {events[0].correlation_id} — {len(events)} events, {human_duration(total)}"
    lines = [head]
    for e in events:
        offset = (e.at - start).total_seconds() * 1000
        lines.append(f"+{human_duration(offset)}  {describe(e)}")
    if chain:
        lines.append("Chain: " + " → ".join(chain))
    return "\n".join(lines)
