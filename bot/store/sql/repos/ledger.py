"""The tool ledger of the run tables: each tool call a run made, started and finished (a call with side effects
found only started after a crash is reported as interrupted, never run again).  The ledgers of runs started by this
process are kept as written (``store.chats.ledgers``), so a resumed run's ledger needs no read."""

from __future__ import annotations

import json
from typing import Any

from agents.messages import ToolCall, ToolResult
from agents.tools.ledger import LedgerEntry, LedgerStatus, args_key
from bot.redaction import redact_json, redact_value
from bot.store.sql.cache import KnownLedger, Lru
from bot.store.sql.ops import Step, WriteResult, redact
from bot.store.sql.store import SqlStore
from bot.store.values import utcnow


class LedgerTable:
    """The tool-ledger part of :class:`~bot.store.sql.repos.runs.RunStore` (one of its bases)."""

    store: SqlStore
    _ledgers: Lru[KnownLedger]

    async def ledger_get(self, run_id: str, call_id: str) -> LedgerEntry | None:
        known = self._ledgers.get(run_id)
        if known is not None:
            row = known.rows.get(call_id)
            return None if row is None else _ledger_entry(run_id, (call_id, *row))
        rows = await self.store.read(
            "SELECT call_id, name, status, result, args FROM tool_ledger WHERE run_id = ? AND call_id = ?",
            (run_id, call_id),
        )
        return _ledger_entry(run_id, rows[0]) if rows else None

    async def ledger_entries(self, run_id: str) -> list[LedgerEntry]:
        """Every call the run recorded, in the order they were recorded."""
        rows = await self.store.read(
            "SELECT call_id, name, status, result, args FROM tool_ledger WHERE run_id = ? ORDER BY updated_at, call_id",
            (run_id,),
        )
        return [_ledger_entry(run_id, row) for row in rows]

    async def ledger_started(self, run_id: str, call: ToolCall) -> None:
        args = args_key(redact_value(call.args))

        def committed(result: WriteResult) -> None:
            known = self._ledgers.peek(run_id)
            if known is not None and result.counts[-1]:  # DO NOTHING: a row there stays (a fence check may go first)
                known.rows[call.id] = (call.name, "started", None, args)

        await self.store.write(
            [
                Step(
                    "INSERT INTO tool_ledger (run_id, call_id, name, status, result, args, updated_at) "
                    "VALUES (?, ?, ?, 'started', NULL, ?, ?) ON CONFLICT DO NOTHING",
                    (run_id, call.id, call.name, args, utcnow()),
                )
            ],
            on_commit=committed,
        )

    async def ledger_finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None:
        status: LedgerStatus = "failed" if result.is_error else "succeeded"
        saved = redact(redact_json(result.model_dump_json()), self.store.secrets)  # as the row will hold it
        known = self._ledgers.peek(run_id)
        kept = None if known is None else known.rows.get(result.call_id)
        # The started row's arguments, as written (the update keeps a row's own): redacted and encoded once a call.
        args = args_key(redact_value(call.args)) if kept is None else kept[3]
        # Not awaited: whatever the run writes next commits after it.  Lost in a crash, a call with side effects
        # reads as started, which is reported as interrupted and never re-run (a safe one simply runs again).
        self.store.write_later(
            [
                Step(
                    "INSERT INTO tool_ledger (run_id, call_id, name, status, result, args, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, call_id) DO UPDATE SET "
                    "status = excluded.status, result = excluded.result, updated_at = excluded.updated_at",
                    (run_id, result.call_id, result.name, status, saved, args, utcnow()),
                )
            ],
            what=f"recording the result of tool call {result.call_id}",
        )
        if known is not None:  # queued: every later read or write of this process comes after it
            known.rows[result.call_id] = (result.name, status, saved, args)


def _ledger_entry(run_id: str, row: Any) -> LedgerEntry:
    call_id, name, status, result, args = row
    return LedgerEntry(
        run_id=run_id,
        call_id=call_id,
        name=name,
        status=status,
        result=ToolResult.model_validate_json(result) if result else None,
        args=json.loads(args) if args else None,
    )
