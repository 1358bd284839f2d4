"""The store as ports: one repository Protocol per concept, what the services depend on.

The SQL implementations live beside them in :mod:`bot.store` (the only place with SQL: ``tests/test_no_raw_sql.py``
checks it); ``tests/fakes/repos.py`` has in-memory ones for unit tests. A repository method is one transaction;
where a service must commit several things at once (a job's claim with the message it sends), the repository
hands out opaque :class:`Change` values and commits them together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.store.base import EventLog, SettingsReader, Store
from bot.store.values import Change, Committed, Rewrite, StoredTrigger

if TYPE_CHECKING:
    from agents.messages import Message, ToolCall, ToolResult
    from agents.tools.ledger import LedgerEntry
    from bot.store.cache import ChatState
    from bot.store.jobs import Job
    from bot.store.memory import MemoryHit
    from bot.store.ops import Step
    from bot.store.rows import InterruptRow, OutboxRow, RunRow
    from bot.store.usage import Spent

__all__ = [
    "BacklogCounts",
    "Change",
    "ChatReads",
    "ChatStore",
    "Committed",
    "ConsoleReads",
    "EvalRepo",
    "EventLog",
    "InboxRepo",
    "InterruptRepo",
    "JobRepo",
    "MemoryRepo",
    "ReplaySource",
    "Rewrite",
    "RunRepo",
    "ScheduledRepo",
    "ScrubRepo",
    "SettingsReader",
    "Store",
    "TraceRepo",
    "TurnStore",
    "UsageRepo",
    "WebSessionRepo",
]

T = TypeVar("T", bound=StoredTrigger)

InboxRepo = EventLog
"""The inbox table as the intake uses it (:class:`~bot.store.base.EventLog`)."""


# -- runs, interrupts, outbox ---------------------------------------------------------------------------------


class RunRepo(Protocol):
    """Runs, their checkpoints and tool ledger, the outbox and the audit log (:class:`~bot.store.runs.RunStore`)."""

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
    """Pending and resolved interrupts (:class:`~bot.store.runs.RunStore`); one pending per chat key."""

    async def pending(self, chat_key: str) -> InterruptRow | None: ...

    async def get_interrupt(self, interrupt_id: str) -> InterruptRow | None: ...

    async def all_pending(self) -> list[InterruptRow]: ...

    async def latest_interrupt(self, run_id: str) -> InterruptRow | None: ...


# -- the console, health and evals ------------------------------------------------------------------------------


class WebSessionRepo(Protocol):
    """The console's sign-ins, by the digest of their token (:class:`~bot.store.web_sessions.SqlWebSessions`)."""

    async def add(self, digest: str, user: str, now: datetime, expires: datetime) -> None:
        """Store a session (and drop those expired at ``now``)."""

    async def user(self, digest: str, now: datetime) -> str | None:
        """Who the session is, while it has not expired."""

    async def remove(self, digest: str) -> None: ...


class ConsoleReads(SettingsReader, Protocol):
    """What the console lists (:class:`~bot.store.console.SqlConsoleReads`); reads only."""

    async def pending_count(self) -> int: ...

    async def pending_ids(self) -> list[str]:
        """The ids of the pending interrupts, in id order."""

    async def agents_of(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The agent of each run."""

    async def chats(self, query: str, limit: int) -> list[tuple[str, datetime, int]]:
        """(chat, last message time, messages) by last activity; ``query`` finds chats by key or by a word."""

    async def pending_per_chat(self) -> dict[str, int]: ...

    async def conversation(self, chat_key: str, limit: int) -> list[tuple[str, str, str, Any]]:
        """The chat's last ``limit`` history rows, oldest first: (role, agent, message JSON, created_at)."""

    async def chat_runs(self, chat_key: str, limit: int) -> list[tuple[Any, ...]]:
        """The chat's newest runs: (id, agent, status, correlation id, user id, created_at)."""

    async def run(self, run_id: str) -> tuple[Any, ...] | None:
        """(id, agent, status, correlation id, user id, created_at, chat key) of a run."""

    async def chat_strategies(self) -> list[tuple[str, str]]:
        """(settings key, strategy JSON) of every strategy set (the global one too, key ``*``)."""


class BacklogCounts(Protocol):
    """The gauges the store feeds (:class:`~bot.store.console.SqlConsoleReads`)."""

    async def backlog(self) -> tuple[int, int, int]:
        """Pending interrupts, unsent outbox rows and unhandled inbox events."""


class EvalRepo(Protocol):
    """Eval runs (:class:`~bot.store.evals.SqlEvalRuns`): a summary line and the whole result as JSON."""

    async def add(self, line: Sequence[Any], data: str) -> None:
        """``line``: id, suite, models, status, cases, trials, passed, pass rate, cost, started_at."""

    async def recent(self, suite: str | None, limit: int) -> list[tuple[Any, ...]]:
        """The newest runs' lines first (of one suite, or of all)."""

    async def data(self, run_id: str) -> str | None: ...

    async def previous(self, suite: str, run_id: str, started: datetime) -> str | None:
        """The data of the suite's run before ``run_id`` (started at ``started``)."""


class ReplaySource(Protocol):
    """What evals made from traces read besides the trace events (:class:`~bot.store.evals.SqlReplaySource`)."""

    async def request(self, chat_key: str, correlation_id: str) -> tuple[str, int] | None:
        """(user id, id of the request's message) of the request's first run."""

    async def message_data(self, message_id: int) -> str | None: ...

    async def resolution(self, interrupt_id: str) -> str | None: ...

    async def answers(self, chat_key: str, first_id: int) -> list[str]:
        """The chat's assistant messages (JSON) from ``first_id`` on, in order."""

    async def history(self, chat_key: str, before_id: int, limit: int = 200) -> list[str]:
        """The chat's messages (JSON) before ``before_id``: the newest ``limit``, oldest first."""

    async def memories(self) -> list[tuple[int, str]]:
        """(id, text) of every memory, in id order."""


# -- tracing --------------------------------------------------------------------------------------------------


class TraceRepo(Protocol):
    """Trace events (:class:`~bot.store.traces.SqlTraces`); a row is ``id, chat_key, correlation_id, run_id, agent,
    type, data JSON, created_at``."""

    async def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert rows in one commit."""

    def keep_days(self, days: float) -> None:
        """Delete rows older than ``days`` in the store's retention passes."""

    async def requests(self, chat_key: str, last: int) -> list[str]:
        """The correlation ids of the chat's last ``last`` requests, oldest first."""

    async def events(self, correlation_id: str, chat_key: str | None = None) -> list[tuple[Any, ...]]: ...

    async def newest_chat(self) -> str | None: ...

    async def after(self, chat_key: str, seq: int) -> list[tuple[Any, ...]]:
        """The chat's rows after ``seq``, with ``seq`` first in each."""

    async def first_routes(self, since: datetime) -> list[tuple[str, int]]:
        """(chat, seq of its first ``route`` event) of the chats routed since ``since``."""


# -- scheduled messages and jobs ---------------------------------------------------------------------------------


class ScheduledRepo(Protocol):
    """Scheduled messages (:class:`~bot.store.scheduled.SqlScheduled`)."""

    async def add(
        self, sid: str, chat_key: str, text: str, due: datetime, by: str, at: datetime, limits: tuple[int, int]
    ) -> tuple[int, int] | None:
        """Store a pending message unless the chat or ``by`` has ``limits`` (per chat, per person) pending
        already; None when stored, else those (chat, person) counts."""

    async def pending(self, chat_key: str | None = None) -> list[tuple[str, str, str, datetime]]:
        """(id, chat, text, due) of the pending messages (of one chat, or all), the soonest first."""

    async def get(self, sid: str) -> tuple[str, str] | None:
        """(chat, text) of a message."""

    async def cancel(self, chat_key: str, sid: str, by: str | None = None) -> bool:
        """Cancel a pending message of the chat (``by``: only if that person scheduled it); False when it was
        not pending (or not theirs)."""

    async def send(self, sid: str, chat_key: str, message_json: str) -> int | None:
        """Mark a pending message sent and put ``message_json`` in the outbox, in one transaction: the outbox row's
        id, None when it was not pending (sent once, whoever tries)."""


class JobRepo(Protocol[T]):
    """Recurring jobs and their fires (:class:`~bot.store.jobs.JobStore`); ``T`` is the trigger type."""

    async def add(
        self,
        *,
        chat_key: str,
        owner: str,
        name: str,
        trigger: T,
        action: str,
        text: str,
        agent: str | None,
        first: datetime,
        max_per_chat: int,
        max_per_user: int,
    ) -> Job[T]: ...

    async def get(self, job_id: str) -> Job[T] | None: ...

    async def of_chat(self, chat_key: str) -> list[Job[T]]: ...

    async def of_owner(self, owner: str) -> list[Job[T]]: ...

    async def live(self, limit: int = 200) -> list[Job[T]]: ...

    async def due(self, now: datetime, limit: int = 100) -> list[Job[T]]: ...

    async def soonest(self) -> datetime | None: ...

    async def set_status(
        self, job_id: str, status: str, *, was: Sequence[str], next_fire: datetime | None = None
    ) -> bool: ...

    def claim_steps(
        self,
        job: Job[T],
        due: datetime,
        following: datetime | None,
        *,
        status: str,
        attempt: int = 0,
        event_key: str | None = None,
        detail: str | None = None,
        fired: datetime | None = None,
    ) -> list[Change]: ...

    def move_step(self, job_id: str, due: datetime, following: datetime | None) -> Change: ...

    def pause_step(self, job_id: str, due: datetime) -> Change: ...

    def settle_step(
        self, job_id: str, due: datetime, attempt: int, status: str, detail: str | None = None
    ) -> Change: ...

    def retry_step(self, job_id: str, due: datetime, attempt: int, at: datetime) -> Change: ...

    def drop_retry_step(self, job_id: str, due: datetime, attempt: int) -> Change: ...

    def start_retry_step(self, job_id: str, due: datetime, attempt: int, event_key: str) -> Change: ...

    async def commit(
        self,
        changes: Sequence[Change],
        *,
        outbox: tuple[str, str] | None = None,
        inbox: tuple[str, str, str] | None = None,
    ) -> Committed:
        """Commit ``changes`` in one transaction, with an outbox row ``(chat, message JSON)`` and an inbox event
        ``(event key, chat, event JSON)`` when given."""

    async def started(self) -> list[tuple[str, datetime, int, str]]: ...

    async def outcome(self, event_key: str) -> str | None: ...

    async def due_retries(self, now: datetime) -> list[tuple[str, datetime, int]]: ...

    async def fires(self, job_id: str) -> list[tuple[datetime, int, str, str | None]]: ...


# -- usage, memory, forgetting ------------------------------------------------------------------------------------


class UsageRepo(Protocol):
    """Tokens and cost per scope and period (:class:`~bot.store.usage.UsageStore`)."""

    @property
    def shared(self) -> bool:
        """Other processes write the rows too."""

    async def add(self, spent: Sequence[Spent]) -> None: ...

    async def spent(self, scopes: Sequence[str], periods: Sequence[str]) -> dict[tuple[str, str], Spent]: ...

    async def top(self, prefix: str, period: str, limit: int = 10) -> list[Spent]: ...

    def keep_days(self, days: int) -> None: ...


class MemoryRepo(Protocol):
    """Long-term memories per person, linked accounts, vectors, chat summaries and session values
    (:class:`~bot.store.memory.MemoryStore`)."""

    async def person(self, identity: str) -> str: ...

    async def identities(self, person: str) -> list[str]: ...

    async def issue_code(self, identity: str, minutes: float) -> str: ...

    async def code_owner(self, code: str) -> str | None: ...

    async def link(
        self, first: str, second: str, by: str, *, code: str | None = None, extra: Sequence[Change] = ()
    ) -> str | None:
        """Link two accounts (``extra``: changes committed with it, an audit row)."""

    async def unlink(self, identity: str) -> bool: ...

    async def add(self, person: str, text: str, source: str, max_items: int) -> tuple[int, bool]: ...

    async def count(self, person: str) -> int: ...

    async def newest(self, person: str, limit: int, offset: int = 0) -> list[MemoryHit]: ...

    async def get(self, person: str, ids: Sequence[int]) -> list[MemoryHit]: ...

    def known_empty(self, identity: str) -> str | None:
        """The account's person when it is known to have no memories (no query needed), else None."""

    async def recall(self, identity: str, terms: list[str], limit: int) -> tuple[str, list[MemoryHit]]: ...

    async def search(self, person: str, terms: list[str], limit: int) -> list[MemoryHit]: ...

    async def delete(self, person: str, ids: Sequence[int] | None) -> int: ...

    async def put_vector(self, memory_id: int, person: str, model: str, vector: Sequence[float]) -> None: ...

    async def vectors(self, person: str, model: str) -> list[tuple[int, tuple[float, ...]]]: ...

    async def summary(self, chat_key: str) -> tuple[str, int]: ...

    async def set_summary(self, chat_key: str, summary: str, upto_id: int) -> None: ...

    async def session(self, chat_key: str, agent: str) -> dict[str, str]: ...

    async def set_session(self, chat_key: str, agent: str, name: str, value: str, run_id: str) -> None: ...

    async def forget_chat(self, chat_key: str) -> None: ...


class ChatReads(SettingsReader, Protocol):
    """A chat's cached state (history, summary, pending interrupt) and settings, as the per-message path reads
    them (:class:`~bot.store.sql.SqlStore`)."""

    async def chat_state(self, chat_key: str) -> ChatState: ...

    async def chat_settings(self, settings_key: str) -> dict[str, Any]: ...


class TurnStore(ChatReads, Protocol):
    """What a chat's turn writes and reads: its event marked handled with its message (and changes committed with
    them), the chat's cached state and settings (:class:`~bot.store.sql.SqlStore`)."""

    async def accept(
        self, event_key: str, chat_key: str, message: Message | None, *, extra: Sequence[Step] = ()
    ) -> bool:
        """Mark the event handled with ``message`` in the history and ``extra`` in the same write; False when it
        was handled before."""


class ChatStore(Store, EventLog, ChatReads, Protocol):
    """Sessions, settings, inbox events and chats' cached state: the store as the per-message path uses it
    (:class:`~bot.store.sql.SqlStore`)."""


class ScrubRepo(Protocol):
    """Rewriting stored rows without some facts (:class:`~bot.store.scrub.SqlScrub`).

    A place is a table and the columns that can hold a fact (``trace_events``: ``data``, ``interrupts``: ``prompt``,
    ``payload``, ``resolution``…): :data:`~bot.store.scrub.PLACES`.
    """

    places: Mapping[str, tuple[str, ...]]
    """Each place's columns (in the order :meth:`rows` gives them)."""

    async def chats_of(self, identities: Iterable[str]) -> set[str]:
        """The chats the accounts ``identities`` (``channel:user_id``) ran requests in."""

    async def rows(
        self, place: str, chats: Sequence[str], hints: Sequence[str] | None
    ) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """(key, values) of the place's rows in ``chats`` whose columns contain one of ``hints`` (all: None)."""

    async def rewrite(self, rewrites: Sequence[Rewrite], chats: Callable[[str], bool]) -> bool | None:
        """Commit ``rewrites`` in one transaction and drop the cached state of the chats ``chats`` selects; on
        SQLite the WAL is then checkpointed and truncated (True when it was; None on PostgreSQL)."""
