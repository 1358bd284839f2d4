"""The console's, the evals' and tracing's tables as ports (:mod:`bot.store.ports` re-exports them): sign-ins,
what the console lists, eval runs, what replays read, trace events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from bot.store.base import SettingsReader

__all__ = ["BacklogCounts", "ConsoleReads", "EvalRepo", "ReplaySource", "TraceRepo", "WebSessionRepo"]


# -- the console, health and evals ------------------------------------------------------------------------------


class WebSessionRepo(Protocol):
    """The console's sign-ins, by the digest of their token
    (:class:`~bot.store.sql.repos.web_sessions.SqlWebSessions`)."""

    async def add(self, digest: str, user: str, now: datetime, expires: datetime) -> None:
        """Store a session (and drop those expired at ``now``)."""

    async def user(self, digest: str, now: datetime) -> str | None:
        """Who the session is, while it has not expired."""

    async def remove(self, digest: str) -> None: ...


class ConsoleReads(SettingsReader, Protocol):
    """What the console lists (:class:`~bot.store.sql.repos.console.SqlConsoleReads`); reads only."""

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
    """The gauges the store feeds (:class:`~bot.store.sql.repos.console.SqlConsoleReads`)."""

    async def backlog(self) -> tuple[int, int, int]:
        """Pending interrupts, unsent outbox rows and unhandled inbox events."""


class EvalRepo(Protocol):
    """Eval runs (:class:`~bot.store.sql.repos.evals.SqlEvalRuns`): a summary line and the whole result as JSON."""

    async def add(self, line: Sequence[Any], data: str) -> None:
        """``line``: id, suite, models, status, cases, trials, passed, pass rate, cost, started_at."""

    async def recent(self, suite: str | None, limit: int) -> list[tuple[Any, ...]]:
        """The newest runs' lines first (of one suite, or of all)."""

    async def data(self, run_id: str) -> str | None: ...

    async def previous(self, suite: str, run_id: str, started: datetime) -> str | None:
        """The data of the suite's run before ``run_id`` (started at ``started``)."""


class ReplaySource(Protocol):
    """What evals made from traces read besides the trace events
    (:class:`~bot.store.sql.repos.evals.SqlReplaySource`)."""

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
    """Trace events (:class:`~bot.store.sql.repos.traces.SqlTraces`); a row is ``id, chat_key,
    correlation_id, run_id, agent, type, data JSON, created_at``."""

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
