"""The tool ledger of a run in the store (what a resumed or re-run run must not run again)."""

from __future__ import annotations

from typing import Any

from agents.messages import ToolCall
from agents.tools.ledger import LedgerEntry, args_key
from bot.redaction import redact_value
from bot.store.ports import LedgerRepo


class RunLedger:
    """The tool ledger of one run, in the store; fresh runs skip the database read.

    ``rerun``: what the run's first attempt (cut off by a crash) finished, in order: a call of the re-run with the
    same tool and arguments takes its recorded result instead of running again (once per recorded call), since the
    model names its calls anew.
    """

    def __init__(self, runs: LedgerRepo, resumed: bool, rerun: list[LedgerEntry] | None = None) -> None:
        self.runs = runs
        self.resumed = resumed
        self._local: dict[tuple[str, str], LedgerEntry] = {}
        self._earlier = [e for e in rerun or [] if e.result is not None]

    async def get(self, run_id: str, call: ToolCall) -> LedgerEntry | None:
        entry = self._local.get((run_id, call.id))
        if entry is None and self.resumed:
            entry = await self.runs.ledger_get(run_id, call.id)
        if entry is None and self._earlier:
            # The ledger keeps arguments redacted (:mod:`bot.redaction`): compare them as stored.
            key = args_key(redact_value(call.args))
            for n, earlier in enumerate(self._earlier):
                if earlier.name == call.name and args_key(redact_value(earlier.args or {})) == key:
                    return self._earlier.pop(n)
        return entry

    async def started(self, run_id: str, call: ToolCall) -> None:
        await self.runs.ledger_started(run_id, call)
        self._local[(run_id, call.id)] = LedgerEntry(
            run_id=run_id, call_id=call.id, name=call.name, status="started", args=call.args
        )

    async def finished(self, run_id: str, call: ToolCall, result: Any) -> None:
        await self.runs.ledger_finished(run_id, call, result)
        status = "failed" if result.is_error else "succeeded"
        self._local[(run_id, result.call_id)] = LedgerEntry(
            run_id=run_id, call_id=result.call_id, name=result.name, status=status, result=result, args=call.args
        )
