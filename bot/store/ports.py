"""The store as ports: one repository Protocol per concept, what the services depend on.

The ports and their values (:mod:`bot.store.values`, :mod:`bot.store.rows`, :mod:`bot.store.chat_state`) import no
implementation; the SQL implementations live in :mod:`bot.store.sql` (the only place with SQL:
``tests/test_no_raw_sql.py`` checks it) and only the composition root builds them (``tests/test_layering.py``);
``tests/fakes/`` has an in-memory one of every port for unit tests (``tests/fakes/all_repos.py``: all of
:class:`Repos`; ``tests/test_every_port_has_a_fake.py`` fails for a port without one), held to the SQL one by the
contract suites ``tests/store/test_*contract.py``. A repository method is one transaction;
where a service must commit several things at once (a job's claim with the message it sends), the repository
hands out opaque :class:`Change` values and commits them together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.store.base import EventLog, SettingsReader, Store
from bot.store.bundle import PartitionedStore, SettingsAnnounce
from bot.store.console_ports import BacklogCounts, ConsoleReads, EvalRepo, ReplaySource, TraceRepo, WebSessionRepo
from bot.store.run_ports import AuditLog, InterruptRepo, LedgerRepo, RunRepo, Runs
from bot.store.values import Change, Committed, Job, MemoryHit, Paired, Rewrite, Spent, StoredTrigger, WaitingCode

if TYPE_CHECKING:
    from agents.messages import Message
    from bot.store.chat_state import ChatState

__all__ = [
    "AuditLog",
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
    "PairingRepo",
    "PartitionedStore",
    "ReplaySource",
    "Repos",
    "Rewrite",
    "LedgerRepo",
    "RunRepo",
    "Runs",
    "ScheduledRepo",
    "ScrubRepo",
    "SettingsAnnounce",
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


# -- scheduled messages and jobs ---------------------------------------------------------------------------------


class ScheduledRepo(Protocol):
    """Scheduled messages (:class:`~bot.store.sql.repos.scheduled.SqlScheduled`)."""

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
    """Recurring jobs and their fires (:class:`~bot.store.sql.repos.jobs.JobStore`); ``T`` is the trigger type."""

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


# -- pairing ---------------------------------------------------------------------------------------------------


class PairingRepo(Protocol):
    """Codes given to unknown senders and the senders let in with them
    (:class:`~bot.store.sql.repos.pairing.PairingStore`)."""

    async def issue(
        self, channel: str, user_id: str, user_name: str, chat_key: str, minutes: float, max_pending: int
    ) -> WaitingCode | None:
        """The sender's code (the one they have, else a new one); None when ``max_pending`` codes of the channel
        wait already."""

    async def find(self, code: str) -> WaitingCode | None: ...

    async def waiting(self) -> list[WaitingCode]: ...

    async def approve(self, code: WaitingCode, by: str, extra: Sequence[Change] = (), *, admin: bool = False) -> bool:
        """Let the code's sender in and use the code up, with ``extra`` in the same commit; False when the code
        expired or was used meanwhile."""

    async def unpair(self, channel: str, user_id: str, extra: Sequence[Change] = ()) -> bool: ...

    async def is_paired(self, channel: str, user_id: str) -> bool: ...

    async def standing(self, channel: str, user_id: str) -> bool | None:
        """None: not paired; else whether the paired sender is an admin too."""

    async def admin_channels(self) -> set[str]: ...

    async def paired(self) -> list[Paired]: ...


# -- usage, memory, forgetting ------------------------------------------------------------------------------------


class UsageRepo(Protocol):
    """Tokens and cost per scope and period (:class:`~bot.store.sql.repos.usage.UsageStore`)."""

    @property
    def shared(self) -> bool:
        """Other processes write the rows too."""

    async def add(self, spent: Sequence[Spent]) -> None: ...

    async def spent(self, scopes: Sequence[str], periods: Sequence[str]) -> dict[tuple[str, str], Spent]: ...

    async def top(self, prefix: str, period: str, limit: int = 10) -> list[Spent]: ...

    def keep_days(self, days: int) -> None: ...


class MemoryRepo(Protocol):
    """Long-term memories per person, linked accounts, vectors, chat summaries and session values
    (:class:`~bot.store.sql.repos.memory.SqlMemoryStore`)."""

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
    them (:class:`~bot.store.sql.store.SqlStore`)."""

    async def chat_state(self, chat_key: str) -> ChatState: ...

    async def chat_settings(self, settings_key: str) -> dict[str, Any]: ...


class TurnStore(ChatReads, Protocol):
    """What a chat's turn writes and reads: its event marked handled with its message (and changes committed with
    them), the chat's cached state and settings (:class:`~bot.store.sql.store.SqlStore`)."""

    async def accept(
        self, event_key: str, chat_key: str, message: Message | None, *, extra: Sequence[Change] = ()
    ) -> bool:
        """Mark the event handled with ``message`` in the history and ``extra`` in the same write; False when it
        was handled before."""


class ChatStore(Store, EventLog, ChatReads, Protocol):
    """Sessions, settings, inbox events and chats' cached state: the store as the per-message path uses it
    (:class:`~bot.store.sql.store.SqlStore`)."""


class ScrubRepo(Protocol):
    """Rewriting stored rows without some facts (:class:`~bot.store.sql.repos.scrub.SqlScrub`).

    A place is a table and the columns that can hold a fact (``trace_events``: ``data``, ``interrupts``: ``prompt``,
    ``payload``, ``resolution``…): :data:`~bot.store.sql.repos.scrub.PLACES`.
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


# -- all of them -------------------------------------------------------------------------------------------------


class Repos(Protocol[T]):
    """Every repository on one store, each made once (``T``: the jobs' trigger type): what the composition root
    hands the services (:class:`~bot.store.sql.repos.SqlRepos`)."""

    @property
    def console(self) -> ConsoleReads: ...

    @property
    def evals(self) -> EvalRepo: ...

    @property
    def replay(self) -> ReplaySource: ...

    @property
    def jobs(self) -> JobRepo[T]: ...

    @property
    def memories(self) -> MemoryRepo: ...

    @property
    def pairing(self) -> PairingRepo: ...

    @property
    def scheduled(self) -> ScheduledRepo: ...

    @property
    def scrub(self) -> ScrubRepo: ...

    @property
    def traces(self) -> TraceRepo: ...

    @property
    def usage(self) -> UsageRepo: ...

    @property
    def web_sessions(self) -> WebSessionRepo: ...
