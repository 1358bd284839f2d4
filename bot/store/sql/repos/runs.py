"""Runs, checkpoints and interrupts; with the tool ledger (:mod:`~bot.store.sql.repos.ledger`), the outbox
(:mod:`~bot.store.sql.repos.outbox`) and the audit log (:mod:`~bot.store.sql.repos.audit`), the run tables.

Built on the group-commit writer of :class:`~bot.store.sql.store.SqlStore`: every
method is one write (one transaction) so the orders the design relies on hold:
a checkpoint and its interrupt row commit together before the prompt is sent;
resolving an interrupt is a conditional update on ``status = 'pending'``
(exactly once, whoever presses first); a reply is committed to the outbox
before it is sent and removed from it after.  The pending interrupt of a chat is
cached, so the per-message path does not read the database.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from functools import lru_cache
from typing import Any

from agents.messages import Message
from bot.redaction import redact_json, redact_text, redact_value
from bot.store.rows import (
    INTERRUPT_COLUMNS,
    RUN_COLUMNS,
    InterruptRow,
    OutboxRow,
    RunRow,
    interrupt_from_row,
    run_from_row,
)
from bot.store.sql.cache import KnownLedger, PendingSlot
from bot.store.sql.messages import add_rows, insert_messages
from bot.store.sql.ops import MARK_HANDLED, Step, WriteResult, outbox_step
from bot.store.sql.repos.audit import PRUNE_AUDIT, AuditTable
from bot.store.sql.repos.ledger import LedgerTable
from bot.store.sql.repos.outbox import OutboxTable
from bot.store.sql.sent_journal import SentMarks
from bot.store.sql.store import SqlStore
from bot.store.values import to_json, utcnow

__all__ = ["InterruptRow", "OutboxRow", "RunRow", "RunStore", "checkpoint_json"]


_OPEN = "('running', 'paused')"
_FINISHED_BEFORE = f"SELECT id FROM runs WHERE status NOT IN {_OPEN} AND updated_at < ?"
PRUNE_RUNS = (
    f"DELETE FROM interrupts WHERE run_id IN ({_FINISHED_BEFORE})",
    f"DELETE FROM tool_ledger WHERE run_id IN ({_FINISHED_BEFORE})",
    f"DELETE FROM runs WHERE status NOT IN {_OPEN} AND updated_at < ?",
)
_INSERT_RUN = (
    f"INSERT INTO runs ({RUN_COLUMNS}, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, {{cutoff}}, NULL, ?, ?, ?)"
)
_INSERT_RUN_AFTER_MESSAGE = _INSERT_RUN.format(
    cutoff="(SELECT COALESCE(MAX(id), 0) FROM session_messages WHERE chat_key = ?)"
)
_INSERT_RUN_WITH_CUTOFF = _INSERT_RUN.format(cutoff="?")
_FINISH_RUN = "UPDATE runs SET status = ?, checkpoint = NULL, updated_at = ? WHERE id = ?"
"""A run ends (its checkpoint goes): what ``_update_run`` would make, without its keywords (measured: see
bench/README.md, "Per-message micro-optimisations", ``runs.py`` ``_FINISH_RUN``)."""
RETENTION_EVERY_S = 3600.0
"""Runs and the audit log are pruned at most this often (their limits are days)."""


class RunStore(OutboxTable, LedgerTable, AuditTable):
    """The durable side of runs and interrupts, and (from its bases) of their outbox, tool ledger and audit log."""

    def __init__(self, store: SqlStore, *, runs_days: float = 30, audit_days: float = 365) -> None:
        self.store = store
        store.add_retention(_age_rule(runs_days, audit_days, store.clock.monotonic))
        self._pending = store.chats.pending
        self._paused = store.chats.paused
        """Runs paused by this process: the row and its checkpoint's JSON, as committed (no read to resume)."""
        self._ledgers = store.chats.ledgers
        """The ledgers of runs started by this process, as written (a resumed run's ledger needs no read)."""
        self._marks = SentMarks(store)

    # -- runs -----------------------------------------------------------------------

    def start_run_step(self, run: RunRow, *, after_message: bool = False) -> Step:
        """The insert of a new run.

        ``after_message``: the step follows the insert of the run's user message in the same write,
        and the run's ``history_cutoff`` is that message's id (the chat's newest row).
        """
        # A new run (its id is new, or the insert fails): every ledger row it will have is written by this process.
        self._ledgers.put(run.id, KnownLedger(run.chat_key))
        now = utcnow()
        head = (run.id, run.chat_key, run.agent, run.status, run.correlation_id, run.user_id, run.reply_to)
        if after_message:
            return Step(_INSERT_RUN_AFTER_MESSAGE, (*head, run.chat_key, run.direct, now, now))
        return Step(_INSERT_RUN_WITH_CUTOFF, (*head, run.history_cutoff, run.direct, now, now))

    def start_run_later(self, run: RunRow) -> None:
        """Record a new run without waiting: the run's later writes commit after it, in order."""
        self.store.write_later([self.start_run_step(run)], what=f"starting run {run.id}")

    async def get_run(self, run_id: str) -> RunRow | None:
        rows = await self.store.read(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return run_from_row(rows[0]) if rows else None

    async def paused_run(self, run_id: str) -> RunRow | None:
        """The paused run an interrupt belongs to, for ending its pause (taken from memory when this process paused it).

        Only the one that resolved the interrupt calls this (the conditional update makes it
        one), so the memory entry is taken, not copied.
        """
        kept = self._paused.pop(run_id)
        if kept is None:
            return await self.get_run(run_id)
        row, saved = kept
        checkpoint = json.loads(saved)
        # As the database has it: a handoff before the pause changed the run's agent there too.
        return replace(row, status="paused", agent=checkpoint.get("agent") or row.agent, checkpoint=checkpoint)

    async def runs_with_status(self, *statuses: str) -> list[RunRow]:
        marks = ", ".join("?" for _ in statuses)
        rows = await self.store.read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN ({marks}) ORDER BY created_at", statuses
        )
        return [run_from_row(r) for r in rows]

    async def set_run(self, run_id: str, **fields: Any) -> None:
        await self.store.write([self._update_run(run_id, **fields)])

    def set_run_later(self, run_id: str, **fields: Any) -> None:
        """Queue a change of the run's row without waiting (later writes of the run commit after it)."""
        self.store.write_later([self._update_run(run_id, **fields)], what=f"updating run {run_id}")

    def _update_run(self, run_id: str, **fields: Any) -> Step:
        if "checkpoint" in fields and fields["checkpoint"] is not None:
            # Stored without secrets (:mod:`bot.redaction`); a run this process paused keeps its own copy.
            fields["checkpoint"] = redact_json(checkpoint_json(fields["checkpoint"]))
        fields["updated_at"] = utcnow()
        return Step(_update_sql(tuple(fields)), (*fields.values(), run_id))

    async def finish_run(
        self, run: RunRow, status: str, messages: Sequence[Message], outbound: str | None
    ) -> int | None:
        """One transaction: the run's turns join the history, the run ends, the reply enters the outbox.

        Returns the outbox id of the reply (None without one).
        """
        now = utcnow()
        steps = insert_messages(run.chat_key, messages, now) if messages else []
        steps.append(Step(_FINISH_RUN, (status, now, run.id)))
        if outbound is not None:
            steps.append(outbox_step(run.chat_key, outbound, None, now))
        history = self.store.chats.history
        self._ledgers.pop(run.id)

        def committed(result: WriteResult) -> None:
            if messages:
                rows = result.rows[: len(messages)]
                history.committed(run.chat_key, lambda state: add_rows(state, rows, messages))

        result = await self.store.write(steps, on_commit=committed, grows=run.chat_key if messages else None)
        return int(result.rows[-1][0]) if outbound is not None else None

    # -- interrupts -------------------------------------------------------------------

    async def pause(self, run: RunRow, checkpoint: dict[str, Any] | str, interrupt: InterruptRow, prompt: str) -> int:
        """Checkpoint, interrupt row and the prompt's outbox entry in one transaction; returns the outbox id."""
        now = utcnow()
        saved = checkpoint_json(checkpoint)
        steps = [
            self._update_run(run.id, status="paused", checkpoint=saved),
            Step(
                f"INSERT INTO interrupts ({INTERRUPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    interrupt.id,
                    interrupt.chat_key,
                    interrupt.run_id,
                    interrupt.kind,
                    redact_text(interrupt.prompt),
                    to_json(redact_value(interrupt.payload)),
                    to_json(interrupt.choices),
                    interrupt.nonce,
                    interrupt.requester,
                    "pending",
                    None,
                    None,
                    None,
                    0,
                    interrupt.created_at,
                    interrupt.expires_at,
                ),
            ),
            outbox_step(run.chat_key, prompt, interrupt.id, now),
        ]

        def committed(_result: WriteResult) -> None:
            self._pending.committed(interrupt.chat_key, lambda slot: _set(slot, interrupt))
            self._paused.put(run.id, (run, saved))

        result = await self.store.write(steps, on_commit=committed)
        return int(result.rows[0][0])

    async def pending(self, chat_key: str) -> InterruptRow | None:
        """The chat's pending interrupt (cached)."""
        return (await self._pending.get(chat_key)).row

    async def get_interrupt(self, interrupt_id: str) -> InterruptRow | None:
        rows = await self.store.read(f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE id = ?", (interrupt_id,))
        return interrupt_from_row(rows[0]) if rows else None

    async def all_pending(self) -> list[InterruptRow]:
        rows = await self.store.read(f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE status = 'pending'")
        return [interrupt_from_row(r) for r in rows]

    async def resolve(
        self,
        row: InterruptRow,
        status: str,
        resolution: dict[str, Any] | None,
        by: str | None,
        *,
        run_status: str | None = None,
        event_key: str | None = None,
    ) -> bool | None:
        """Move a pending interrupt to ``status``; False when it was no longer pending (exactly once).

        ``run_status``: the interrupt's run changes to it in the same transaction (a resumed run is running).
        ``event_key``: the press that answers it is recorded in the same transaction; None is returned
        when that press was seen before (a platform's redelivery), and nothing changed.
        """
        step = Step(
            "UPDATE interrupts SET status = ?, resolution = ?, resolved_by = ?, resolved_at = ? "
            "WHERE id = ? AND status = 'pending'",
            (status, to_json(resolution) if resolution else None, by, utcnow(), row.id),
            guard=True,
        )
        steps = [step] if run_status is None else [step, self._update_run(row.run_id, status=run_status)]
        if event_key is not None:
            now = utcnow()
            steps.insert(0, Step(MARK_HANDLED, (event_key, row.chat_key, now), guard=True))

        def committed(result: WriteResult) -> None:
            if result.ok:
                self._pending.committed(row.chat_key, lambda slot: _clear(slot, row.id))

        result = await self.store.write(steps, on_commit=committed, received=event_key)
        if event_key is not None and not result.ok and result.counts == [0]:
            return None
        return result.ok

    async def unlock(self, row: InterruptRow, choices: list[tuple[str, str]], prompt: str) -> bool:
        """A locked confirmation was shown in full: its real choices (and new prompt text) from now on.

        False when it is no longer pending.
        """
        step = Step(
            "UPDATE interrupts SET choices = ?, prompt = ? WHERE id = ? AND status = 'pending'",
            (to_json([list(c) for c in choices]), redact_text(prompt), row.id),
            guard=True,
        )

        def committed(result: WriteResult) -> None:
            if result.ok:  # the cached row is this very object
                row.choices, row.prompt = [list(c) for c in choices], prompt

        return (await self.store.write([step], on_commit=committed)).ok

    def set_prompt_ref(self, row: InterruptRow, ref: str | None) -> None:
        """The prompt now lives in another message (edits go there)."""
        row.prompt_ref = ref
        self.store.write_later(
            [Step("UPDATE interrupts SET prompt_ref = ? WHERE id = ?", (ref, row.id))], what=f"moving prompt {row.id}"
        )

    async def mark_reprompted(self, row: InterruptRow) -> None:
        step = Step("UPDATE interrupts SET reprompted = reprompted + 1 WHERE id = ?", (row.id,))
        await self.store.write([step], on_commit=lambda _r: _bump(row))

    async def latest_interrupt(self, run_id: str) -> InterruptRow | None:
        rows = await self.store.read(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE run_id = ? ORDER BY created_at DESC LIMIT 1", (run_id,)
        )
        return interrupt_from_row(rows[0]) if rows else None

    async def message(self, row_id: int) -> Message | None:
        """One history row by id (the user message a run started from)."""
        rows = await self.store.read("SELECT data FROM session_messages WHERE id = ?", (row_id,))
        return Message.model_validate_json(rows[0][0]) if rows else None


def _age_rule(runs_days: float, audit_days: float, monotonic: Callable[[], float]) -> Callable[[], list[Step]]:
    """The retention statements for finished runs (interrupts and ledger first) and the audit log, hourly
    (``monotonic``: the store's clock)."""
    last = [-RETENTION_EVERY_S]

    def rule() -> list[Step]:
        now = monotonic()
        if now - last[0] < RETENTION_EVERY_S:
            return []
        last[0] = now
        runs_before = utcnow() - timedelta(days=runs_days)
        return [
            *(Step(sql, (runs_before,)) for sql in PRUNE_RUNS),
            Step(PRUNE_AUDIT, (utcnow() - timedelta(days=audit_days),)),
        ]

    return rule


@lru_cache(maxsize=64)
def _update_sql(names: tuple[str, ...]) -> str:
    return f"UPDATE runs SET {', '.join(f'{k} = ?' for k in names)} WHERE id = ?"


def checkpoint_json(checkpoint: dict[str, Any] | str) -> str:
    """A checkpoint as stored (compact JSON); text passes through."""
    if isinstance(checkpoint, str):
        return checkpoint
    return to_json(checkpoint)


def _set(slot: PendingSlot, row: InterruptRow) -> None:
    slot.row = row


def _clear(slot: PendingSlot, interrupt_id: str) -> None:
    if slot.row is not None and slot.row.id == interrupt_id:
        slot.row = None


def _bump(row: InterruptRow) -> None:
    row.reprompted += 1
