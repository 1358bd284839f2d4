"""The tool ledger of a run in the store (what a resumed run must not run again)."""

from __future__ import annotations

from typing import Any

from agents.messages import ToolCall
from agents.tools.ledger import LedgerEntry
from bot.store.runs import RunStore


class RunLedger:
    """The tool ledger of one run, in the store; fresh runs skip the database read."""

    def __init__(self, runs: RunStore, resumed: bool) -> None:
        self.runs = runs
        self.resumed = resumed
        self._local: dict[tuple[str, str], LedgerEntry] = {}

    async def get(self, run_id: str, call_id: str) -> LedgerEntry | None:
        entry = self._local.get((run_id, call_id))
        if entry is None and self.resumed:
            entry = await self.runs.ledger_get(run_id, call_id)
        return entry

    async def started(self, run_id: str, call: ToolCall) -> None:
        await self.runs.ledger_started(run_id, call)
        self._local[(run_id, call.id)] = LedgerEntry(run_id=run_id, call_id=call.id, name=call.name, status="started")

    async def finished(self, run_id: str, result: Any) -> None:
        await self.runs.ledger_finished(run_id, result)
        status = "failed" if result.is_error else "succeeded"
        self._local[(run_id, result.call_id)] = LedgerEntry(
            run_id=run_id, call_id=result.call_id, name=result.name, status=status, result=result
        )
