"""Every repository on one SQL store: what the composition root hands the services (:mod:`bot.store.ports`)."""

from __future__ import annotations

from functools import cached_property
from typing import Generic, TypeVar

from bot.store.sql.repos.console import SqlConsoleReads
from bot.store.sql.repos.evals import SqlEvalRuns, SqlReplaySource
from bot.store.sql.repos.jobs import JobStore
from bot.store.sql.repos.memory import SqlMemoryStore
from bot.store.sql.repos.pairing import PairingStore
from bot.store.sql.repos.scheduled import SqlScheduled
from bot.store.sql.repos.scrub import SqlScrub
from bot.store.sql.repos.traces import SqlTraces
from bot.store.sql.repos.usage import UsageStore
from bot.store.sql.repos.web_sessions import SqlWebSessions
from bot.store.sql.store import SqlStore
from bot.store.values import StoredTrigger, TriggerReader

T = TypeVar("T", bound=StoredTrigger)


class SqlRepos(Generic[T]):
    """The SQL repositories of ``store`` (each made once, when first asked for); ``triggers`` reads jobs' stored
    schedules."""

    def __init__(self, store: SqlStore, triggers: TriggerReader[T]) -> None:
        self.store = store
        self.triggers = triggers

    @cached_property
    def console(self) -> SqlConsoleReads:
        return SqlConsoleReads(self.store)

    @cached_property
    def evals(self) -> SqlEvalRuns:
        return SqlEvalRuns(self.store)

    @cached_property
    def replay(self) -> SqlReplaySource:
        return SqlReplaySource(self.store)

    @cached_property
    def jobs(self) -> JobStore[T]:
        return JobStore(self.store, self.triggers)

    @cached_property
    def memories(self) -> SqlMemoryStore:
        return SqlMemoryStore(self.store)

    @cached_property
    def pairing(self) -> PairingStore:
        return PairingStore(self.store)

    @cached_property
    def scheduled(self) -> SqlScheduled:
        return SqlScheduled(self.store)

    @cached_property
    def scrub(self) -> SqlScrub:
        return SqlScrub(self.store)

    @cached_property
    def traces(self) -> SqlTraces:
        return SqlTraces(self.store)

    @cached_property
    def usage(self) -> UsageStore:
        return UsageStore(self.store)

    @cached_property
    def web_sessions(self) -> SqlWebSessions:
        return SqlWebSessions(self.store)
