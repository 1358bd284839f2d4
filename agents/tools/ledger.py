"""The tool-call ledger: what ran, so a resumed run never runs a call twice.

A call is recorded as started before it runs and as finished (with its result)
after.  On resume, a finished call's recorded result is reused; a risky call
that started but never finished (the process died during it) is reported,
never retried.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel

from agents.messages import ToolCall, ToolResult

LedgerStatus = Literal["started", "succeeded", "failed"]


class LedgerEntry(BaseModel):
    run_id: str
    call_id: str
    name: str
    status: LedgerStatus
    result: ToolResult | None = None


class ToolLedger(Protocol):
    async def get(self, run_id: str, call_id: str) -> LedgerEntry | None: ...

    async def started(self, run_id: str, call: ToolCall) -> None: ...

    async def finished(self, run_id: str, result: ToolResult) -> None: ...


class MemoryLedger:
    """A ledger in memory (tests, and runs outside the gateway)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], LedgerEntry] = {}

    async def get(self, run_id: str, call_id: str) -> LedgerEntry | None:
        return self.entries.get((run_id, call_id))

    async def started(self, run_id: str, call: ToolCall) -> None:
        self.entries[(run_id, call.id)] = LedgerEntry(run_id=run_id, call_id=call.id, name=call.name, status="started")

    async def finished(self, run_id: str, result: ToolResult) -> None:
        status: LedgerStatus = "failed" if result.is_error else "succeeded"
        self.entries[(run_id, result.call_id)] = LedgerEntry(
            run_id=run_id, call_id=result.call_id, name=result.name, status=status, result=result
        )
