"""Every repository port in memory on one set of tables (:class:`~bot.store.ports.Repos`), each made once: what a
unit test hands a service in place of :class:`~bot.store.sql.repos.SqlRepos`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar

from bot.store.values import StoredTrigger, utcnow
from tests.fakes.console_repos import FakeConsoleReads, FakeReplay, FakeScrub, FakeTables
from tests.fakes.memory_repos import FakeMemory
from tests.fakes.more_repos import FakeEvalRuns, FakePairing, FakeUsage
from tests.fakes.repos import FakeJobs, FakeScheduled, FakeTraces, FakeWebSessions

__all__ = ["FakeRepos"]

T = TypeVar("T", bound=StoredTrigger)


class FakeRepos(Generic[T]):
    """The fakes of every repository; the console, replays and scrubbing read :attr:`tables` (a test puts rows
    there), replays read the memories of :attr:`memories`; ``clock`` (naive UTC) dates codes."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.tables = FakeTables()
        self.memories = FakeMemory(clock)
        self.console = FakeConsoleReads(self.tables)
        self.evals = FakeEvalRuns()
        self.replay = FakeReplay(self.tables, self.memories)
        self.jobs: FakeJobs[T] = FakeJobs()
        self.pairing = FakePairing(clock)
        self.scheduled = FakeScheduled()
        self.scrub = FakeScrub(self.tables)
        self.traces = FakeTraces()
        self.usage = FakeUsage()
        self.web_sessions = FakeWebSessions()
