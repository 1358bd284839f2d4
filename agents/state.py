"""The paused run: a typed, versioned :class:`RunState`, stored as the run's checkpoint.

Shape (schema version 1, as JSON)::

    {"$schemaVersion": 1, "agent": "code-fixer", "runner": "react", "phase": "tool_confirm",
     "state": {...the runner's own state...}, "handoff_chain": ["debugger", "code-fixer"],
     "handoff": {"context": {...HandoffContext...}, "messages": [...turns of the agents before...]},
     "graph": {"graph": "triage", "node": "fix", "state": {...}, "steps": 2}}

``handoff`` is there only for a run that was handed off (or a graph's later node), ``graph`` only inside a
graph.  The runner's state starts its ``messages`` with the user message that started the run; the chat
history before it is not copied but referenced by the run's ``history_cutoff``.

Reading (:meth:`RunState.load`) takes what any gateway stored: version 0 (before the envelope, the runner's
state at the top level) is upgraded; version 1 is this shape (the dicts the run manager wrote before this
type existed read as they are); a newer, unknown version is refused with a clear error instead of being
guessed at, as are missing fields.  Writing (:meth:`RunState.encode`) gives compact JSON, once per pause.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.graph import GraphPosition
from agents.handoffs import HandoffContext
from agents.messages import Message, ToolResult, unanswered_calls

RUN_STATE_VERSION = 1


class RunStateError(Exception):
    """A stored run state cannot be used (unknown version, missing or malformed fields)."""


class HandedOver(BaseModel):
    """What the agents before this one left: the handoff's context and their turns (as stored)."""

    context: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)

    def handoff(self) -> HandoffContext | None:
        return HandoffContext.from_json(self.context) if self.context else None

    def turns(self) -> list[Message]:
        return [Message.model_validate(m) for m in self.messages]


class GraphAt(BaseModel):
    """Where a graph run paused: its node, the state so far, the node runs made."""

    graph: str
    node: str
    state: dict[str, Any] = Field(default_factory=dict)
    steps: int = 1

    def position(self) -> GraphPosition:
        return GraphPosition(self.graph, self.node, dict(self.state), self.steps)


class RunState(BaseModel):
    """A paused run: which agent, its runner's state, and how the run got to it (handoffs, graph)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    version: int = Field(default=RUN_STATE_VERSION, alias="$schemaVersion")
    agent: str
    runner: str
    phase: str = ""
    state: dict[str, Any]
    """The runner's own JSON, handed back to its ``resume``."""
    handoff_chain: list[str] = Field(default_factory=list)
    handoff: HandedOver | None = None
    graph: GraphAt | None = None

    # -- reading ----------------------------------------------------------------------

    @classmethod
    def load(cls, data: Mapping[str, Any] | str | bytes | None) -> RunState:
        """The stored state at the current version, or :class:`RunStateError`."""
        if isinstance(data, str | bytes):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise RunStateError(f"the checkpoint is not JSON: {exc}") from None
        if not data:
            raise RunStateError("the run has no checkpoint")
        if not isinstance(data, Mapping):
            raise RunStateError("the checkpoint is not an object")
        upgraded = dict(data)
        version = upgraded.get("$schemaVersion", 0)
        seen = set()
        while version in UPGRADERS and version not in seen:
            seen.add(version)
            upgraded = UPGRADERS[version](upgraded)
            version = upgraded.get("$schemaVersion", 0)
        if version != RUN_STATE_VERSION:
            raise RunStateError(
                f"checkpoint version {version!r} is not supported (this gateway reads up to {RUN_STATE_VERSION}); "
                "was it written by a newer version?"
            )
        for key in ("agent", "runner", "state"):
            if key not in upgraded:
                raise RunStateError(f"checkpoint is missing {key!r}")
        try:
            return cls.model_validate(upgraded)
        except ValidationError as exc:
            raise RunStateError(f"checkpoint is malformed: {exc.errors()[0]['msg']}") from None

    # -- writing ----------------------------------------------------------------------

    def encode(self) -> str:
        """The state as stored: compact JSON (absent parts left out)."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    # -- what a resume needs ------------------------------------------------------------

    @property
    def chain(self) -> list[str]:
        return list(self.handoff_chain) or [self.agent]

    def message(self) -> Message | None:
        """The user message the run started from."""
        first = (self.state.get("messages") or [None])[0]
        return Message.model_validate(first) if isinstance(first, dict) else None

    def query(self) -> str:
        """The text the run answers."""
        first = (self.state.get("messages") or [None])[0]
        return str(first.get("text") or "") if isinstance(first, dict) else ""

    def prefix(self) -> list[Message]:
        """The turns of the agents before this one (handoffs, a graph's earlier nodes)."""
        return self.handoff.turns() if self.handoff is not None else []

    def handoff_context(self) -> HandoffContext | None:
        return self.handoff.handoff() if self.handoff is not None else None

    def position(self) -> GraphPosition | None:
        return self.graph.position() if self.graph is not None else None

    def closed_messages(self, reason: str) -> list[Message]:
        """The run's own turns (after its user message) with every open tool call answered by ``reason``.

        Used when a paused run is cancelled or superseded: its turns join the history, and no call is
        left without a result.
        """
        messages = [Message.model_validate(m) for m in self.state.get("messages", [])][1:]
        done = {r["call_id"]: ToolResult.model_validate(r) for r in self.state.get("results", [])}
        open_calls = unanswered_calls(messages)
        if open_calls:
            results = [
                done.get(c.id) or ToolResult(call_id=c.id, name=c.name, content=reason, is_error=True)
                for c in open_calls
            ]
            messages.append(Message.results(results))
        return [*self.prefix(), *messages]


def _from_v0(data: dict[str, Any]) -> dict[str, Any]:
    # Version 0 (before the envelope): the runner's state at the top level.
    state = {k: v for k, v in data.items() if k not in ("agent", "runner")}
    return {
        "$schemaVersion": 1,
        "agent": data.get("agent", "react"),
        "runner": data.get("runner", "react"),
        "phase": state.get("phase", "tool_confirm"),
        "state": state,
        "handoff_chain": data.get("handoff_chain", []),
    }


UPGRADERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _from_v0}
"""Version → the function that lifts a stored state of that version one step."""
