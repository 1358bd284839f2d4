"""Trace events as people read them: one model, four densities.

Every stored event becomes a :class:`Step`: an icon, a one-line title, how long it took, and labelled fields (a
tool's input and output, a handoff's reason and payload, a guardrail's violations, policy and repair, a model's
tokens).  The renderers only choose how much of it to show:

- :func:`compact` — one line per step with the key fields cut short: ``/trace`` in a chat;
- :func:`lines` — the title and every field on its own line: ``bot trace``, ``bot agents replay`` and the web
  console's run timeline (``describe`` and ``detail`` in :mod:`bot.tracing.timeline` are these);
- :func:`block` — the design's ``[Trace] tool (debug-analyzer) - 0.3s`` blocks: ``bot agents run --trace``;
- :func:`run_lines` — the design's step lines (``[debug-analyzer] …``, ``🔄 Handoff: a → b``, ``✓ …``):
  ``bot agents run``.

Values were redacted when the event was kept and again when it was read (:mod:`bot.redaction`); here they are
made visible as the chat prompt shows arguments (zero-width and bidi characters as ``\\uXXXX``:
:mod:`agents.visible`) and bounded, so a step never runs over a screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from agents.visible import visible, visible_json
from bot.tracing.event import TraceEvent

FIELD_CHARS = 300
"""The longest a field is shown in full views (a tool's output is kept up to 1,000 characters)."""
COMPACT_CHARS = 70
"""The longest a field is shown in ``/trace``."""


def human_duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def shorten(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis when longer."""
    flat = " ".join(text.split()) if "\n" in text or "  " in text else text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def shown(value: Any) -> str:
    """A field value as text: strings as they are, anything else as compact JSON; either with whatever could
    hide part of it made visible."""
    if isinstance(value, str):
        return visible(value)
    return visible_json(value)


@dataclass(frozen=True)
class Detail:
    label: str
    value: str
    brief: bool = False
    """Shown (cut short) in the one-line ``/trace`` view too."""
    titled: bool = False
    """Already said by the step's title: only the design's ``[Trace]`` block repeats it."""


@dataclass(frozen=True)
class Step:
    """One trace event as people read it."""

    event: TraceEvent
    icon: str
    title: str
    took_ms: float | None = None
    fields: tuple[Detail, ...] = field(default=())

    @property
    def line(self) -> str:
        took = f" ({human_duration(self.took_ms)})" if self.took_ms is not None else ""
        return f"{self.icon} {self.title}{took}"


def step_of(event: TraceEvent) -> Step:
    d, agent = event.data, event.agent
    took = float(d["duration_ms"]) if "duration_ms" in d else None
    shape = _SHAPES.get(event.type)
    if shape is None:
        return Step(event, "•", f"{event.type} {agent}".strip(), took)
    icon, title, fields = shape(event, d)
    # Whatever a step shows, it shows completely: hidden characters made visible (cheap for plain text).
    shown_fields = tuple(replace(f, value=visible(f.value)) for f in fields if f.value)
    return Step(event, icon, visible(title), took, shown_fields)


def confidence_shown(value: object) -> str:
    """A route's confidence as a percentage: a share (0-1) since wave 4, a percentage in older traces."""
    number = float(value) if isinstance(value, int | float) else 0.0
    return f"{number * 100 if number <= 1 else number:.0f} %"


def _route(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    matched = [*(d.get("keywords") or []), *(d.get("patterns") or [])]
    how = f"matched: {', '.join(map(str, matched))}" if matched else confidence_shown(d.get("confidence"))
    return (
        "🎯",
        f"route → {event.agent or 'nobody'} ({d.get('method')}, {how})",
        [Detail("Strategy", str(d.get("strategy") or "")), Detail("Note", str(d.get("note") or ""))],
    )


def _llm(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    tokens = f"{int(d.get('input_tokens') or 0):,} → {int(d.get('output_tokens') or 0):,}"
    extra = [f"{int(d[k]):,} {k.split('_')[0]}" for k in ("thinking_tokens", "cached_tokens") if d.get(k)]
    fields = [
        Detail("Model", str(d.get("model") or "model"), titled=True),
        Detail("Tokens", tokens + (f" ({', '.join(extra)})" if extra else ""), titled=not extra),
        Detail("For", str(d.get("purpose") or "").replace("_", " ")),
        Detail("Cut off", "at the output limit" if d.get("truncated") else ""),
        Detail("Failed attempts", shown(d["failed_attempts"]) if d.get("failed_attempts") else ""),
    ]
    return "🧠", f"{event.agent}: {d.get('model', 'model')} {tokens.replace(' ', '')} tokens", fields


def _tool(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    error = str(d.get("error") or "")
    size = int(d.get("result_size") or 0)
    cut = bool(d.get("result")) and size > len(str(d["result"]))
    fields = [
        Detail("Input", shown(d["arguments"]) if d.get("arguments") is not None else "", brief=True),
        Detail("Output", str(d.get("result") or "") if not error else "", brief=True),
        Detail("Size", f"{size:,} characters in all" if cut else ""),
        Detail("Error", error, brief=True),
    ]
    if not error and not d.get("result"):
        fields.append(Detail("Output", f"{size:,} characters (not kept)"))
    return "🔧", f"{event.agent}: {d.get('tool')}" + (" ⚠️ error" if error else ""), fields


def _handoff(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    accepted = d.get("status") == "accepted"
    fields = [
        Detail("Reason", str(d.get("reason") or ""), brief=not accepted, titled=accepted),
        Detail("Payload", shown(d["payload"]) if d.get("payload") is not None else "", brief=True),
    ]
    verb = "→" if accepted else "⛔ refused →"
    reason = f": {d.get('reason', '')}" if accepted else ""
    return "🔀", f"{event.agent} {verb} {d.get('target')}{reason}", fields


def _guardrail(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    status = str(d.get("status") or "")
    repairs = int(d.get("repairs") or 0)
    fields = [
        Detail("Policy", str(d.get("policy") or "")),
        Detail("Violations", "; ".join(map(str, d.get("violations") or [])), brief=True),
        Detail("Repair", f"{repairs} attempt{'s' if repairs != 1 else ''}" if repairs else "", brief=True),
        Detail("Still", "; ".join(map(str, d.get("errors") or [])) if status != "warned" else "", brief=True),
        Detail("Sent anyway", "; ".join(map(str, d.get("errors") or [])) if status == "warned" else ""),
    ]
    return "🛡", f"{event.agent}: {d.get('guardrail')} {status}", fields


def _interrupt(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    who = f" by {d['by']}" if d.get("by") else ""
    return "⏸", f"{d.get('kind')} {d.get('status')}{who}", []


def _graph(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    when = f" ({d['when']})" if d.get("when") else ""
    return "🧭", f"{d.get('graph')}: {d.get('node')} → {d.get('to')}{when}", []


def _memory(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    """What a run was told besides its history: memories (ids and tokens, never their text), the summary,
    session keys."""
    parts = []
    if d.get("recalled"):
        ids = ", ".join(f"#{i}" for i in d["recalled"][:10]) + (" …" if len(d["recalled"]) > 10 else "")
        parts.append(f"recalled {ids} ({d.get('tokens', 0)}/{d.get('budget', 0)} tokens)")
    if d.get("summary_chars"):
        parts.append(f"summary {d['summary_chars']} chars")
    if isinstance(d.get("session"), dict):
        keys = "; ".join(f"{k}={shorten(str(v)) if v else '(not set)'}" for k, v in d["session"].items())
        parts.append(f"session: {keys}")
    return "📝", f"{event.agent}: {', '.join(parts) or 'nothing recalled'}", []


def _summary(event: TraceEvent, d: dict[str, Any]) -> tuple[str, str, list[Detail]]:
    return "📝", f"{d.get('messages')} older messages summarised by {d.get('by')} ({d.get('summary_chars')} chars)", []


_SHAPES = {
    "route": _route,
    "llm_call": _llm,
    "tool_call": _tool,
    "handoff": _handoff,
    "guardrail": _guardrail,
    "interrupt": _interrupt,
    "graph": _graph,
    "memory": _memory,
    "summary": _summary,
    "error": lambda e, d: ("⚠️", f"{e.agent}: {d.get('message', '')}", []),
    "run": lambda e, d: ("🏁", f"{e.agent}: {d.get('status')}", []),
}


# -- renderers ----------------------------------------------------------------------------------------


def compact(step: Step) -> str:
    """One line: the title and the brief fields cut short (``/trace``)."""
    brief = [f"{f.label.lower()} {shorten(f.value, COMPACT_CHARS)}" for f in step.fields if f.brief and not f.titled]
    return step.line + (" — " + "; ".join(brief) if brief else "")


def lines(step: Step, indent: str = "  ") -> list[str]:
    """The title, then each field on its own line (``bot trace``, replay, the web console)."""
    shown_fields = (f for f in step.fields if not f.titled)
    return [step.line, *(f"{indent}{f.label}: {shorten(f.value, FIELD_CHARS)}" for f in shown_fields)]


def block(step: Step) -> list[str]:
    """The design's ``[Trace] tool (debug-analyzer) - 0.3s`` block (``bot agents run --trace``)."""
    event, d = step.event, step.event.data
    kind = {"llm_call": "llm", "tool_call": "tool"}.get(event.type, event.type)
    who = f"{event.agent} → {d['target']}" if event.type == "handoff" else event.agent
    took = f" - {human_duration(step.took_ms)}" if step.took_ms is not None else ""
    head = [f"[Trace] {kind} ({who}){took}"]
    if event.type == "tool_call":
        head.append(f"  Tool: {d.get('tool')}")
    elif event.type == "guardrail":
        head.append(f"  Guardrail: {d.get('guardrail')} {d.get('status')}")
    elif event.type not in ("llm_call", "handoff"):
        head.append(f"  {step.title}")
    return [*head, *(f"  {f.label}: {shorten(f.value, FIELD_CHARS)}" for f in step.fields)]


def run_lines(step: Step) -> list[str]:
    """The design's step lines for one event (``bot agents run``); nothing for bookkeeping."""
    event, d, agent = step.event, step.event.data, step.event.agent
    if event.type == "tool_call":
        value = {f.label: f.value for f in step.fields}
        arguments = shorten(value.get("Input", ""), 80)
        if d.get("error"):
            return [f"[{agent}] {d.get('tool')} {arguments}", f"✗ {shorten(str(d['error']), 120)}"]
        return [f"[{agent}] {d.get('tool')} {arguments}", f"  → {shorten(value.get('Output', ''), 100)}"]
    if event.type == "handoff":
        target = d.get("target")
        calling = f"[{agent}] Calling transfer_to_{str(target).replace('-', '_')}"
        if d.get("status") != "accepted":
            return [calling, f"✗ Handoff refused: {shorten(str(d.get('reason') or ''), 160)}"]
        payload = [f"  Payload: {shorten(shown(d['payload']), 160)}"] if d.get("payload") is not None else []
        return [f"✓ {d.get('reason', '')}", calling, f"🔄 Handoff: {agent} → {target}", *payload]
    if event.type == "guardrail":
        return _guardrail_lines(d)
    if event.type == "graph":
        return [step.line]
    if event.type == "error":
        return [f"⚠️ {agent}: {d.get('message', '')}"]
    if event.type == "interrupt" and d.get("status") != "raised":
        return [step.line]
    return []


def _guardrail_lines(d: dict[str, Any]) -> list[str]:
    name, status, policy = d.get("guardrail"), d.get("status"), d.get("policy")
    if status == "passed":
        return [f"✓ Guardrail {name} passed"]
    out = [f"✗ Guardrail violation: {name}", *(f"  - {v}" for v in d.get("violations") or [])]
    out.append(f"Policy: {policy}")
    if d.get("repairs"):
        out.append("🔧 Repairing output with the model…")
    if status == "repaired":
        return [*out, "✓ Repaired output passes validation"]
    if status == "warned":
        return [*out, "⚠️ Sent anyway (warn)"]
    still = [f"  - {e}" for e in d.get("errors") or []] if d.get("repairs") else []
    return [*out, *(["✗ Still invalid after the repair:", *still] if still else []), "✗ Rejected: not sent"]
