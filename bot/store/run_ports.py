"""The run tables as ports (:mod:`bot.store.ports` re-exports them): runs and their checkpoints, interrupts, the
tool ledger, the outbox and the audit log, each part a Protocol a service can be typed on, and :class:`Runs`, all
of them (:class:`~bot.store.sql.repos.runs.RunStore`, the SQL one, is built only by the composition root)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bot.store.base import Store
from bot.store.values import Change

if TYPE_CHECKING:
    from agents.messages import Message, ToolCall, ToolResult
    from agents.tools.ledger import LedgerEntry
    from bot.store.rows import InterruptRow, OutboxRow, RunRow

__all__ = ["AuditLog", "InterruptRepo", "LedgerRepo", "RunRepo", "Runs"]


class LedgerRepo(Protocol):
    """A run's tool ledger: which calls started and finished (a resumed run does not repeat them)."""

    async def ledger_get(self, run_id: str, call_id: str) -> LedgerEntry | None: ...

    async def ledger_entries(self, run_id: str) -> list[LedgerEntry]: ...

    async def ledger_started(self, run_id: str, call: ToolCall) -> None: ...

    async def ledger_finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None: ...


class AuditLog(Protocol):
    """Who changed what: settings changed with their audit row, and other changes audited."""

    async def change_setting(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Set a chat or global setting and audit it, in one transaction."""

    async def audit(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Audit a change made elsewhere (not a setting of :meth:`change_setting`)."""

    def audit_step(self, actor: str, scope: str, name: str, old: Any, new: Any) -> Change:
        """The audit row as a change, committed with another repository's (a link of accounts, a pairing)."""

    async def audit_log(self, limit: int = 50) -> list[dict[str, Any]]: ...


class RunRepo(Protocol):
    """Runs, their checkpoints and tool ledger, the outbox and the audit log, as the console and recovery read them."""

    async def get_run(self, run_id: str) -> RunRow | None: ...

    async def runs_with_status(self, *statuses: str) -> list[RunRow]: ...

    async def set_run(self, run_id: str, **fields: Any) -> None: ...

    async def message(self, row_id: int) -> Message | None: ...

    async def ledger_entries(self, run_id: str) -> list[LedgerEntry]: ...

    async def ledger_started(self, run_id: str, call: ToolCall) -> None: ...

    async def ledger_finished(self, run_id: str, call: ToolCall, result: ToolResult) -> None: ...

    async def unsent(self) -> list[OutboxRow]: ...

    async def change_setting(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Set a chat or global setting and audit it, in one transaction."""

    async def audit_log(self, limit: int = 50) -> list[dict[str, Any]]: ...


class InterruptRepo(Protocol):
    """Pending and resolved interrupts; one pending per chat key."""

    async def pending(self, chat_key: str) -> InterruptRow | None: ...

    async def get_interrupt(self, interrupt_id: str) -> InterruptRow | None: ...

    async def all_pending(self) -> list[InterruptRow]: ...

    async def latest_interrupt(self, run_id: str) -> InterruptRow | None: ...


class Runs(RunRepo, InterruptRepo, LedgerRepo, AuditLog, Protocol):
    """The run tables as the run manager, the interrupts and the stages write them.  Each write is one transaction,
    committed before it returns (the ``*_later`` ones: with the next write, for the hot path; ``start_run_step``:
    a change the caller commits with its turn)."""

    @property
    def store(self) -> Store:
        """The chat store these tables share a writer with (an interrupt's press is marked handled there)."""

    def start_run_step(self, run: RunRow, *, after_message: bool = False) -> Change:
        """The insert of a new run, for the caller to commit with its turn (``after_message``: its history cutoff
        is the chat's newest message, the one committed with it)."""

    def start_run_later(self, run: RunRow) -> None: ...

    async def paused_run(self, run_id: str) -> RunRow | None:
        """A paused run with its checkpoint (without a read when this process paused it)."""

    def set_run_later(self, run_id: str, **fields: Any) -> None: ...

    async def finish_run(
        self, run: RunRow, status: str, messages: Sequence[Message], outbound: str | None
    ) -> int | None:
        """The run's turns join the history, the run ends, the reply enters the outbox: its outbox id."""

    async def pause(self, run: RunRow, checkpoint: dict[str, Any] | str, interrupt: InterruptRow, prompt: str) -> int:
        """The checkpoint and the interrupt commit together, and the prompt enters the outbox: its outbox id."""

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
        """End a pending interrupt, exactly once (False: it was not pending any more)."""

    async def unlock(self, row: InterruptRow, choices: list[tuple[str, str]], prompt: str) -> bool: ...

    def set_prompt_ref(self, row: InterruptRow, ref: str | None) -> None: ...

    async def mark_reprompted(self, row: InterruptRow) -> None: ...

    async def sent(
        self, outbox_id: int, ref: str | None, interrupt: InterruptRow | str | None = None, *, wait: bool = False
    ) -> None:
        """An outbox entry was sent (a prompt's message reference is kept on its interrupt)."""

    async def is_unsent(self, outbox_id: int) -> bool: ...
