"""Checkpoints: the versioned JSON a paused run resumes from.

Shape (version 1)::

    {"$schemaVersion": 1, "agent": "react", "runner": "react", "phase": "tool_confirm",
     "state": {...runner's own state...}, "handoff_chain": ["debugger", "code-fixer"],
     "handoff": {"context": {...HandoffContext...}, "messages": [...turns of the agents before...]}}

``handoff`` is there only for a run that was handed off (optional in version 1).

The runner's state starts its ``messages`` with the user message that started
the run; the chat history before it is not copied but referenced by the run's
``history_cutoff`` (the id of that message's row).  Older versions are
upgraded on load; a newer, unknown version is refused with a clear error
instead of being guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.messages import Message, ToolResult, unanswered_calls

CHECKPOINT_VERSION = 1


class CheckpointError(Exception):
    """A checkpoint cannot be used (unknown version, missing fields)."""


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


def make_checkpoint(agent: str, runner: str, phase: str, state: dict[str, Any], chain: list[str]) -> dict[str, Any]:
    return {
        "$schemaVersion": CHECKPOINT_VERSION,
        "agent": agent,
        "runner": runner,
        "phase": phase,
        "state": state,
        "handoff_chain": chain,
    }


def load_checkpoint(data: dict[str, Any] | None) -> dict[str, Any]:
    """The checkpoint at the current version, or :class:`CheckpointError`."""
    if not data:
        raise CheckpointError("the run has no checkpoint")
    version = data.get("$schemaVersion", 0)
    seen = set()
    while version in UPGRADERS and version not in seen:
        seen.add(version)
        data = UPGRADERS[version](data)
        version = data.get("$schemaVersion", 0)
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint version {version!r} is not supported (this gateway reads up to {CHECKPOINT_VERSION}); "
            "was it written by a newer version?"
        )
    for key in ("agent", "runner", "state"):
        if key not in data:
            raise CheckpointError(f"checkpoint is missing {key!r}")
    return data


def closed_messages(checkpoint: dict[str, Any], reason: str) -> list[Message]:
    """The run's own turns (after its user message) with every open tool call answered by ``reason``.

    Used when a paused run is cancelled or superseded: its turns join the
    history, and no call is left without a result.
    """
    raw = checkpoint.get("state", {}).get("messages", [])
    handed = [Message.model_validate(m) for m in (checkpoint.get("handoff") or {}).get("messages", [])]
    messages = [Message.model_validate(m) for m in raw][1:]
    done = {r["call_id"]: ToolResult.model_validate(r) for r in checkpoint.get("state", {}).get("results", [])}
    open_calls = unanswered_calls(messages)
    if open_calls:
        results = [
            done.get(c.id) or ToolResult(call_id=c.id, name=c.name, content=reason, is_error=True) for c in open_calls
        ]
        messages.append(Message.results(results))
    return [*handed, *messages]
