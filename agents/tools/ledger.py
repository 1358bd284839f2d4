"""The tool-call ledger: what ran, so a resumed run never runs a call twice.

A call with side effects is recorded as started before it runs; every call is
recorded as finished (with its arguments and result) after.  On resume, a
finished call's recorded result is reused: found by its call id, or, for a run
re-run from its message after a crash (where the model names its calls anew),
by the same tool with the same arguments.  A risky call that started but never
finished (the process died during it) is reported, never retried.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from agents.messages import ToolCall, ToolResult

LedgerStatus = Literal["started", "succeeded", "failed"]


class LedgerEntry(BaseModel):
    run_id: str
    call_id: str
    name: str
    status: LedgerStatus
    result: ToolResult | None = None
    args: dict[str, Any] | None = None


def args_key(args: dict[str, Any]) -> str:
    """The arguments as one canonical string (a re-run's same call matches it)."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


class ToolLedger(Protocol):
    async def get(self, run_id: str, call: ToolCall) -> LedgerEntry | None:
        """The call's entry by its id (a run re-run after a crash also finds, once each, what its first attempt
        finished with the same tool and arguments)."""
        ...

    async def started(self, run_id: str, call: ToolCall) -> None: ...

    async def finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None: ...


class MemoryLedger:
    """A ledger in memory (tests, and runs outside the gateway)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], LedgerEntry] = {}

    async def get(self, run_id: str, call: ToolCall) -> LedgerEntry | None:
        return self.entries.get((run_id, call.id))

    async def started(self, run_id: str, call: ToolCall) -> None:
        self.entries[(run_id, call.id)] = LedgerEntry(
            run_id=run_id, call_id=call.id, name=call.name, status="started", args=call.args
        )

    async def finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None:
        status: LedgerStatus = "failed" if result.is_error else "succeeded"
        self.entries[(run_id, result.call_id)] = LedgerEntry(
            run_id=run_id, call_id=result.call_id, name=result.name, status=status, result=result, args=call.args
        )
