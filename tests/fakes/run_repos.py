"""The run tables in memory: :class:`FakeRuns` implements :class:`~bot.store.run_ports.Runs` (and so
:class:`~bot.store.run_ports.RunRepo`, :class:`~bot.store.run_ports.InterruptRepo`,
:class:`~bot.store.run_ports.LedgerRepo` and :class:`~bot.store.run_ports.AuditLog`), held to
:class:`~bot.store.sql.repos.runs.RunStore` by ``tests/store/test_runs_contract.py``.

Its rows live in the tables of its ``store``, a :class:`~tests.fakes.chat_store.FakeChatStore`, as the SQL tables
share the chat store's database: a change it hands out (``start_run_step``, ``audit_step``) commits when given to
that store's ``accept(extra=...)``, ``set_chat_setting(extra=...)`` or ``commit``, in the same transaction.  What it
leaves out is the store's (see :mod:`tests.fakes.chat_store`): no durability, no group commit (``*_later`` writes
and ``sent`` commit at once, there is no sent journal), no retention of old runs or audit rows.  Values are stored
as the SQL one stores them: checkpoints, prompts, payloads, tool arguments and results redacted (:mod:`bot.redaction`),
settings and audited values as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from agents.messages import Message, ToolCall, ToolResult
from agents.tools.ledger import LedgerEntry, LedgerStatus, args_key
from bot.redaction import redact_json, redact_text, redact_value
from bot.store.rows import InterruptRow, OutboxRow, RunRow
from bot.store.values import to_json
from tests.fakes.chat_store import FakeChange, FakeChatStore, Transaction, check_error

__all__ = ["FakeRuns"]

_RUN_FIELDS = frozenset(f.name for f in fields(RunRow))


def _checkpoint(checkpoint: dict[str, Any] | str) -> dict[str, Any]:
    """A checkpoint as a read gives it back: its redacted JSON, parsed."""
    text = checkpoint if isinstance(checkpoint, str) else to_json(checkpoint)
    loaded: dict[str, Any] = json.loads(redact_json(text))
    return loaded


def _audited(value: Any) -> Any:
    return None if value is None else json.loads(json.dumps(redact_value(value), ensure_ascii=False))


class FakeRuns:
    """:class:`~bot.store.run_ports.Runs` on a :class:`FakeChatStore`'s tables (a new store when none is given)."""

    def __init__(self, store: FakeChatStore | None = None) -> None:
        self.store = store if store is not None else FakeChatStore()
        self._pending: dict[str, InterruptRow | None] = {}
        """The chats' pending interrupts as this process knows them: the very rows it paused with (as the SQL
        store's cache), else read from the table."""
        self._paused: dict[str, tuple[RunRow, dict[str, Any]]] = {}
        """Runs this process paused, with their checkpoints as committed (a resume reads no table)."""

    # -- runs ---------------------------------------------------------------------------------------------------

    def _update_run(self, run_id: str, **changed: Any) -> FakeChange:
        unknown = set(changed) - _RUN_FIELDS
        if unknown:
            raise TypeError(f"runs has no column {sorted(unknown)}")
        if changed.get("checkpoint") is not None:
            changed["checkpoint"] = _checkpoint(changed["checkpoint"])

        def update(tx: Transaction) -> bool:
            row = tx.tables.runs.get(run_id)
            if row is not None:  # an UPDATE of no row changes nothing
                tx.tables.runs[run_id] = replace(row, **changed)
            return True

        return FakeChange(update, f"update run {run_id}")

    def start_run_step(self, run: RunRow, *, after_message: bool = False) -> FakeChange:
        stored = replace(run, checkpoint=None)

        def insert(tx: Transaction) -> bool:
            check_error(run.id not in tx.tables.runs, f"run {run.id} exists")
            cutoff = run.history_cutoff
            if after_message:
                cutoff = max((i for i, (chat, _m) in tx.tables.messages.items() if chat == run.chat_key), default=0)
            tx.tables.runs[run.id] = replace(stored, history_cutoff=cutoff)
            return True

        return FakeChange(insert, f"start run {run.id}")

    def start_run_later(self, run: RunRow) -> None:
        self.store.commit([self.start_run_step(run)], f"starting run {run.id}")

    async def get_run(self, run_id: str) -> RunRow | None:
        row = self.store.tables.runs.get(run_id)
        return None if row is None else replace(row)

    async def paused_run(self, run_id: str) -> RunRow | None:
        """As the SQL one: the run as this process paused it (taken, not copied), else as read."""
        kept = self._paused.pop(run_id, None)
        if kept is None:
            return await self.get_run(run_id)
        row, checkpoint = kept
        return replace(row, status="paused", agent=checkpoint.get("agent") or row.agent, checkpoint=checkpoint)

    async def runs_with_status(self, *statuses: str) -> list[RunRow]:
        return [replace(r) for r in self.store.tables.runs.values() if r.status in statuses]

    async def set_run(self, run_id: str, **fields: Any) -> None:
        self.store.commit([self._update_run(run_id, **fields)])

    def set_run_later(self, run_id: str, **fields: Any) -> None:
        self.store.commit([self._update_run(run_id, **fields)], f"updating run {run_id}")

    async def finish_run(
        self, run: RunRow, status: str, messages: Sequence[Message], outbound: str | None
    ) -> int | None:
        steps = [self.store.insert_messages(run.chat_key, messages)] if messages else []
        steps.append(self._update_run(run.id, status=status, checkpoint=None))
        if outbound is not None:
            steps.append(self._outbox(run.chat_key, outbound, None))
        _failed, returned = self.store.transact(steps)
        return returned[-1] if outbound is not None else None

    @staticmethod
    def _outbox(chat_key: str, message: str, interrupt_id: str | None) -> FakeChange:
        def insert(tx: Transaction) -> bool:
            outbox_id = tx.tables.next_id("outbox")
            tx.tables.outbox[outbox_id] = OutboxRow(outbox_id, chat_key, message, interrupt_id)
            tx.returned.append(outbox_id)
            return True

        return FakeChange(insert, "outbox")

    def enqueue(self, chat_key: str, message_json: str) -> int:
        """Not of the port: an entry another repository committed to the outbox (a scheduled message, a job's
        fire), for a test of what sends it; its id."""
        return self.store.transact([self._outbox(chat_key, message_json, None)])[1][0]

    async def message(self, row_id: int) -> Message | None:
        row = self.store.tables.messages.get(row_id)
        return None if row is None else row[1]

    # -- interrupts ---------------------------------------------------------------------------------------------

    async def pause(self, run: RunRow, checkpoint: dict[str, Any] | str, interrupt: InterruptRow, prompt: str) -> int:
        stored = replace(
            interrupt,
            prompt=redact_text(interrupt.prompt),
            payload=redact_value(interrupt.payload),
            status="pending",
            resolution=None,
            resolved_by=None,
            prompt_ref=None,
            reprompted=0,
        )

        saved = json.loads(checkpoint if isinstance(checkpoint, str) else to_json(checkpoint))  # as paused: unredacted

        def insert(tx: Transaction) -> bool:
            check_error(interrupt.id not in tx.tables.interrupts, f"interrupt {interrupt.id} exists")
            pending = [i for i in tx.tables.interrupts.values() if i.status == "pending"]
            check_error(
                all(i.chat_key != interrupt.chat_key for i in pending),
                f"{interrupt.chat_key} has a pending interrupt already (ux_interrupts_one_pending)",
            )
            tx.tables.interrupts[interrupt.id] = stored
            tx.after.append(lambda: self._cached(interrupt.chat_key, interrupt))
            tx.after.append(lambda: self._paused.__setitem__(run.id, (run, saved)))
            return True

        steps = [
            self._update_run(run.id, status="paused", checkpoint=checkpoint),
            FakeChange(insert, f"interrupt {interrupt.id}"),
            self._outbox(run.chat_key, prompt, interrupt.id),
        ]
        return self.store.transact(steps)[1][0]

    def _cached(self, chat_key: str, row: InterruptRow | None) -> None:
        """A committed change of the chat's pending interrupt, kept if the chat's is cached (write-through)."""
        if chat_key in self._pending:
            self._pending[chat_key] = row

    async def pending(self, chat_key: str) -> InterruptRow | None:
        if chat_key not in self._pending:
            found = [
                i for i in self.store.tables.interrupts.values() if i.chat_key == chat_key and i.status == "pending"
            ]
            self._pending[chat_key] = replace(found[0]) if found else None
        return self._pending[chat_key]

    async def get_interrupt(self, interrupt_id: str) -> InterruptRow | None:
        row = self.store.tables.interrupts.get(interrupt_id)
        return None if row is None else replace(row)

    async def all_pending(self) -> list[InterruptRow]:
        return [replace(i) for i in self.store.tables.interrupts.values() if i.status == "pending"]

    async def latest_interrupt(self, run_id: str) -> InterruptRow | None:
        rows = [i for i in self.store.tables.interrupts.values() if i.run_id == run_id]
        return replace(max(rows, key=lambda i: i.created_at)) if rows else None

    def _interrupt_change(self, interrupt_id: str, name: str, *, guard: bool, **changed: Any) -> FakeChange:
        def change(tx: Transaction) -> bool:
            row = tx.tables.interrupts.get(interrupt_id)
            if row is None or (guard and row.status != "pending"):
                return not guard
            tx.tables.interrupts[interrupt_id] = replace(row, **changed)
            return True

        return FakeChange(change, name)

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
        end = self._interrupt_change(
            row.id, "resolve", guard=True, status=status, resolution=resolution or None, resolved_by=by
        )
        steps = [end] if run_status is None else [end, self._update_run(row.run_id, status=run_status)]
        if event_key is not None:
            steps.insert(0, self.store.mark_handled(event_key, row.chat_key))
        failed = self.store.commit(steps)
        if failed is None:
            if (kept := self._pending.get(row.chat_key)) is not None and kept.id == row.id:
                self._cached(row.chat_key, None)
            return True
        return None if event_key is not None and failed == 0 else False

    async def unlock(self, row: InterruptRow, choices: list[tuple[str, str]], prompt: str) -> bool:
        shown = [list(c) for c in choices]
        change = self._interrupt_change(row.id, "unlock", guard=True, choices=shown, prompt=redact_text(prompt))
        if self.store.commit([change]) is not None:
            return False
        row.choices, row.prompt = shown, prompt
        return True

    def set_prompt_ref(self, row: InterruptRow, ref: str | None) -> None:
        row.prompt_ref = ref
        self.store.commit([self._interrupt_change(row.id, "move prompt", guard=False, prompt_ref=ref)])

    async def mark_reprompted(self, row: InterruptRow) -> None:
        def bump(tx: Transaction) -> bool:
            kept = tx.tables.interrupts.get(row.id)
            if kept is not None:
                tx.tables.interrupts[row.id] = replace(kept, reprompted=kept.reprompted + 1)
            return True

        self.store.commit([FakeChange(bump, "reprompted")])
        row.reprompted += 1

    # -- outbox -------------------------------------------------------------------------------------------------

    async def sent(
        self, outbox_id: int, ref: str | None, interrupt: InterruptRow | str | None = None, *, wait: bool = False
    ) -> None:
        interrupt_id = interrupt if interrupt is None or isinstance(interrupt, str) else interrupt.id
        if isinstance(interrupt, InterruptRow):
            interrupt.prompt_ref = ref

        def remove(tx: Transaction) -> bool:
            tx.tables.outbox.pop(outbox_id, None)
            return True

        steps = [FakeChange(remove, f"sent {outbox_id}")]
        if interrupt_id is not None:
            steps.append(self._interrupt_change(interrupt_id, "prompt ref", guard=False, prompt_ref=ref))
        self.store.commit(steps, f"removing sent outbox entry {outbox_id}")

    async def is_unsent(self, outbox_id: int) -> bool:
        return outbox_id in self.store.tables.outbox

    async def unsent(self) -> list[OutboxRow]:
        return [replace(r) for _, r in sorted(self.store.tables.outbox.items())]

    # -- tool ledger --------------------------------------------------------------------------------------------

    async def ledger_get(self, run_id: str, call_id: str) -> LedgerEntry | None:
        row = self.store.tables.ledger.get((run_id, call_id))
        return None if row is None else _entry(run_id, call_id, row)

    async def ledger_entries(self, run_id: str) -> list[LedgerEntry]:
        rows = [(key[1], row) for key, row in self.store.tables.ledger.items() if key[0] == run_id]
        return [_entry(run_id, call_id, row) for call_id, row in sorted(rows, key=lambda r: (r[1][0], r[0]))]

    async def ledger_started(self, run_id: str, call: ToolCall) -> None:
        args = args_key(redact_value(call.args))

        def insert(tx: Transaction) -> bool:
            if (run_id, call.id) not in tx.tables.ledger:  # ON CONFLICT DO NOTHING
                tx.tables.ledger[(run_id, call.id)] = (tx.tables.next_id("ledger"), call.name, "started", None, args)
            return True

        self.store.commit([FakeChange(insert, f"tool call {call.id}")])

    async def ledger_finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None:
        status: LedgerStatus = "failed" if result.is_error else "succeeded"
        saved = redact_json(result.model_dump_json())
        args = args_key(redact_value(call.args))

        def upsert(tx: Transaction) -> bool:
            kept = tx.tables.ledger.get((run_id, result.call_id))
            stored_args = args if kept is None else kept[4]
            name = result.name if kept is None else kept[1]
            tx.tables.ledger[(run_id, result.call_id)] = (tx.tables.next_id("ledger"), name, status, saved, stored_args)
            return True

        self.store.commit([FakeChange(upsert, f"result of {result.call_id}")])

    # -- audit --------------------------------------------------------------------------------------------------

    async def change_setting(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        await self.store.set_chat_setting(scope, name, new, extra=[self.audit_step(actor, scope, name, old, new)])

    async def audit(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        self.store.commit([self.audit_step(actor, scope, name, old, new)])

    def audit_step(self, actor: str, scope: str, name: str, old: Any, new: Any) -> FakeChange:
        row = {"at": self.store.now(), "actor": actor, "scope": scope, "name": name}
        row |= {"old": _audited(old), "new": _audited(new)}

        def insert(tx: Transaction) -> bool:
            tx.tables.audit.append(row)
            return True

        return FakeChange(insert, "audit")

    async def audit_log(self, limit: int = 50) -> list[dict[str, Any]]:
        return [dict(row) for row in reversed(self.store.tables.audit[-limit:])] if limit > 0 else []


def _entry(run_id: str, call_id: str, row: tuple[int, str, str, str | None, str]) -> LedgerEntry:
    _at, name, status, result, args = row
    return LedgerEntry(
        run_id=run_id,
        call_id=call_id,
        name=name,
        status=status,
        result=ToolResult.model_validate_json(result) if result else None,
        args=json.loads(args) if args else None,
    )
