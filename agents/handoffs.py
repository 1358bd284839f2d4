"""Handoff as a tool: an agent passes the conversation to another agent.

Each ``handoffs`` entry of an agent becomes a ``transfer_to_<target>`` tool
(``reason`` required, ``context`` and ``summary`` optional).  The runner turns
a call of one into a :class:`~agents.results.HandoffRequest` after checking it
(:func:`check_handoff`: the whitelist, cycles, the depth limit); a refused call
gets a tool error the model can read, and the run goes on.  The gateway then
builds a :class:`HandoffContext`, injects it into the target's system prompt
and continues the same run with the target.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.conditions import Condition
from agents.messages import Message, ToolCall
from agents.tools.base import Tool

PREFIX = "transfer_to_"
DEFAULT_MAX_DEPTH = 5


@dataclass(frozen=True)
class HandoffTarget:
    """One allowed handoff of an agent (from its spec's ``handoffs``)."""

    to: str
    when: str = ""
    description: str = ""
    include_context: bool = False
    condition: Condition | None = None
    """``when`` as a condition over the state and the payload: checked before the handoff runs."""
    payload_schema: dict[str, Any] | None = None
    """The JSON schema the call's ``payload`` must fit (the call is refused with the errors otherwise)."""


def tool_name(target: str) -> str:
    return f"{PREFIX}{target.replace('-', '_')}"


def is_handoff_call(call: ToolCall) -> bool:
    return call.name.startswith(PREFIX)


def target_of(call: ToolCall, targets: Sequence[HandoffTarget], known: Sequence[str] = ()) -> str:
    """The agent a ``transfer_to_*`` call names (hyphens were turned into underscores for the model)."""
    raw = call.name.removeprefix(PREFIX)
    for name in [*(t.to for t in targets), *known]:
        if name.replace("-", "_") == raw or name == raw:
            return name
    return raw


async def _control(**_: Any) -> str:
    raise RuntimeError("transfer_to_* is a control tool: the runner turns it into a handoff")


def handoff_tools(targets: Sequence[HandoffTarget]) -> list[Tool]:
    """The ``transfer_to_<target>`` tools offered to the model."""
    tools = []
    for target in targets:
        what = target.description or f"Hand the conversation to the {target.to} agent."
        if target.condition is not None:
            when = f" Only when {target.condition} (it is checked; the payload counts)."
        else:
            when = f" Use it when {target.when.rstrip('.')}." if target.when else ""
        properties: dict[str, Any] = {
            "reason": {"type": "string", "description": "Why you hand off (shown to the user)."},
            "summary": {"type": "string", "description": "What is known so far, for the next agent."},
            "context": {"type": "string", "description": "Details the next agent needs (files, errors)."},
        }
        required = ["reason"]
        if target.payload_schema is not None:
            properties["payload"] = {**target.payload_schema, "description": f"What {target.to} needs, as data."}
            required.append("payload")
        tools.append(
            Tool(
                name=tool_name(target.to),
                description=f"{what}{when} The {target.to} agent continues and answers the user.",
                parameters={"type": "object", "properties": properties, "required": required},
                func=_control,
                risk="safe",
                toolset="control",
            )
        )
    return tools


def check_handoff(
    target: str,
    targets: Sequence[HandoffTarget],
    chain: Sequence[str],
    max_depth: int = DEFAULT_MAX_DEPTH,
    *,
    state: Mapping[str, Any] | None = None,
    payload: Any = None,
) -> str | None:
    """Why a handoff to ``target`` is refused, or None when it may go ahead.

    A ``when`` condition is checked against the run's ``state`` with the call's ``payload`` fields over it.
    """
    entry = next((t for t in targets if t.to == target), None)
    if entry is None:
        allowed = ", ".join(t.to for t in targets) or "none"
        return f"handoff to {target!r} is not allowed for this agent (allowed: {allowed})"
    if target in chain:
        return f"handoff to {target!r} refused: it would form a cycle ({' → '.join([*chain, target])})"
    if len(chain) > max_depth:
        return f"handoff to {target!r} refused: the chain already has {len(chain) - 1} handoffs (limit {max_depth})"
    if entry.condition is not None:
        seen = {**(state or {}), **(payload if isinstance(payload, Mapping) else {})}
        if not entry.condition.holds(seen):
            return (
                f"handoff to {target!r} refused: its condition `{entry.condition}` does not hold "
                f"({entry.condition.explain(seen)})"
            )
    return None


@dataclass
class HandoffContext:
    """What the target agent is told about the handoff (injected into its system prompt)."""

    source: str
    target: str
    reason: str
    summary: str = ""
    context: str = ""
    chain: list[str] = field(default_factory=list)
    correlation_id: str = ""
    recent: list[str] = field(default_factory=list)
    """The last messages of the conversation (``role: text``) when the handoff includes context."""
    payload: Any = None
    """The data the handing-off agent passed (validated against the handoff's payload schema)."""

    def render(self) -> str:
        lines = [
            "## Handoff",
            f"The {self.source} agent handed this conversation to you ({self.target}).",
            f"Reason: {self.reason}",
        ]
        if self.summary:
            lines.append(f"Summary so far: {self.summary}")
        if self.context:
            lines.append(f"Context: {self.context}")
        if self.payload is not None:
            lines.append(f"Payload: {json.dumps(self.payload, ensure_ascii=False, default=str)}")
        lines.append(f"Chain: {' → '.join(self.chain)}")
        if self.recent:
            lines.append("Recent conversation:")
            lines.extend(f"- {line}" for line in self.recent)
        lines.append("Carry on from here and answer the user yourself.")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "reason": self.reason,
            "summary": self.summary,
            "context": self.context,
            "chain": list(self.chain),
            "correlation_id": self.correlation_id,
            "recent": list(self.recent),
            "payload": self.payload,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HandoffContext:
        return cls(
            source=str(data.get("from", "")),
            target=str(data.get("to", "")),
            reason=str(data.get("reason", "")),
            summary=str(data.get("summary", "")),
            context=str(data.get("context", "")),
            chain=[str(c) for c in data.get("chain", [])],
            correlation_id=str(data.get("correlation_id", "")),
            recent=[str(r) for r in data.get("recent", [])],
            payload=data.get("payload"),
        )


def recent_lines(messages: Sequence[Message], limit: int, width: int = 500) -> list[str]:
    """The last ``limit`` user/assistant texts as ``role (agent): text`` lines (tool traffic left out)."""
    lines = []
    for m in messages:
        if m.role not in ("user", "assistant") or not m.text:
            continue
        who = m.role if not m.agent else f"{m.role} ({m.agent})"
        text = " ".join(m.text.split())
        lines.append(f"{who}: {text if len(text) <= width else text[: width - 1] + '…'}")
    return lines[-limit:] if limit > 0 else []
