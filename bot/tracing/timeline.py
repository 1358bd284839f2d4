"""A request's timeline as people read it: ``/trace`` in a chat (one compact line per step) and ``bot trace`` in a
shell (every step with its fields). Each event is shown through :mod:`bot.tracing.steps`, the presentation the
replay, ``bot agents run`` and the web console's run timeline share."""

from __future__ import annotations

from collections.abc import Sequence

from bot.tracing.event import TraceEvent
from bot.tracing.steps import compact, human_duration, lines, shorten, step_of

__all__ = ["agents_of", "describe", "human_duration", "shorten", "timeline"]


def describe(event: TraceEvent) -> str:
    """One event in one line: its icon, what it was, how long it took."""
    return step_of(event).line


def agents_of(events: Sequence[TraceEvent]) -> list[str]:
    """The agents that worked on a request, in order: not the route, not the run's own bookkeeping (its end and
    the resolution of a pause name the run's agent: a graph's, while its nodes did the work)."""
    chain: list[str] = []
    for e in events:
        bookkeeping = e.type in ("route", "run") or (e.type == "interrupt" and e.data.get("status") != "raised")
        if e.agent and not bookkeeping and (not chain or chain[-1] != e.agent):
            chain.append(e.agent)
    return chain


def timeline(events: Sequence[TraceEvent], *, full: bool = False) -> str:
    """One request: a line per step with its key fields cut short (``/trace``), or with ``full`` each step's
    fields on lines of their own (``bot trace``): tool input and output, handoff payloads, guardrail repairs."""
    if not events:
        return "No trace yet: send a request first."
    start = events[0].at
    chain = agents_of(events)
    total = (events[-1].at - start).total_seconds() * 1000
    out = [f"🧭 Trace {events[0].correlation_id} — {len(events)} events, {human_duration(total)}"]
    for e in events:
        offset = f"+{human_duration((e.at - start).total_seconds() * 1000)}"
        step = step_of(e)
        if full:
            first, *more = lines(step, indent=" " * (len(offset) + 4))
            out += [f"{offset}  {first}", *more]
        else:
            out.append(f"{offset}  {compact(step)}")
    if chain:
        out.append("Chain: " + " → ".join(chain))
    return "\n".join(out)
