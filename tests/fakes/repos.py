"""In-memory repositories (:mod:`bot.store.ports`) for unit tests: the same behaviour as the SQL ones in a few dicts
(``tests/store/test_repo_contract.py`` runs one suite over both), so a service's logic is tested without a
database.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from bot.store.values import LIVE, Change, Committed, Job, JobLimit, StoredTrigger, utcnow

T = TypeVar("T", bound=StoredTrigger)


class FakeWebSessions:
    """:class:`~bot.store.ports.WebSessionRepo` in a dict."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, datetime]] = {}

    async def add(self, digest: str, user: str, now: datetime, expires: datetime) -> None:
        self.rows = {k: v for k, v in self.rows.items() if v[1] >= now}
        self.rows[digest] = (user, expires)

    async def user(self, digest: str, now: datetime) -> str | None:
        row = self.rows.get(digest)
        return row[0] if row is not None and row[1] > now else None

    async def remove(self, digest: str) -> None:
        self.rows.pop(digest, None)


class FakeTraces:
    """:class:`~bot.store.ports.TraceRepo` in a list (``seq`` is the position plus one)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.kept_days: float | None = None
        self.commits = 0

    async def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.rows.extend(tuple(r) for r in rows)
        self.commits += 1

    def keep_days(self, days: float) -> None:
        self.kept_days = days

    def _numbered(self) -> list[tuple[int, tuple[Any, ...]]]:
        return list(enumerate(self.rows, start=1))

    async def requests(self, chat_key: str, last: int) -> list[str]:
        newest: dict[str, int] = {}
        for seq, row in self._numbered():
            if row[1] == chat_key:
                newest[row[2]] = seq
        chosen = sorted(newest, key=lambda c: newest[c], reverse=True)[: max(1, last)]
        return list(reversed(chosen))

    async def events(self, correlation_id: str, chat_key: str | None = None) -> list[tuple[Any, ...]]:
        return [r for r in self.rows if r[2] == correlation_id and (chat_key is None or r[1] == chat_key)]

    async def newest_chat(self) -> str | None:
        return str(self.rows[-1][1]) if self.rows else None

    async def after(self, chat_key: str, seq: int) -> list[tuple[Any, ...]]:
        return [(n, *r) for n, r in self._numbered() if r[1] == chat_key and n > seq]

    async def first_routes(self, since: datetime) -> list[tuple[str, int]]:
        first: dict[str, int] = {}
        for seq, row in self._numbered():
            if row[5] == "route" and row[7] >= since.replace(tzinfo=None):
                first.setdefault(str(row[1]), seq)
        return sorted(first.items(), key=lambda item: item[1])


class FakeScheduled:
    """:class:`~bot.store.ports.ScheduledRepo` in a dict; ``outbox`` lists what was sent."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.outbox: list[tuple[str, str]] = []

    async def add(
        self, sid: str, chat_key: str, text: str, due: datetime, by: str, at: datetime, limits: tuple[int, int]
    ) -> tuple[int, int] | None:
        live = [r for r in self.rows.values() if r["status"] == "pending"]
        counts = sum(r["chat_key"] == chat_key for r in live), sum(r["by"] == by for r in live)
        if counts[0] >= limits[0] or counts[1] >= limits[1]:
            return counts
        self.rows[sid] = {"chat_key": chat_key, "text": text, "due": due, "status": "pending", "by": by}
        return None

    async def pending(self, chat_key: str | None = None) -> list[tuple[str, str, str, datetime]]:
        rows = [
            (sid, r["chat_key"], r["text"], r["due"])
            for sid, r in self.rows.items()
            if r["status"] == "pending" and chat_key in (None, r["chat_key"])
        ]
        return sorted(rows, key=lambda r: r[3])

    async def get(self, sid: str) -> tuple[str, str] | None:
        row = self.rows.get(sid)
        return (row["chat_key"], row["text"]) if row is not None else None

    async def cancel(self, chat_key: str, sid: str, by: str | None = None) -> bool:
        row = self.rows.get(sid)
        if row is None or row["chat_key"] != chat_key or row["status"] != "pending" or by not in (None, row["by"]):
            return False
        row["status"] = "cancelled"
        return True

    async def send(self, sid: str, chat_key: str, message_json: str) -> int | None:
        row = self.rows.get(sid)
        if row is None or row["status"] != "pending":
            return None
        row["status"] = "sent"
        self.outbox.append((chat_key, message_json))
        return len(self.outbox)


# -- jobs ---------------------------------------------------------------------------------------------------------


@dataclass
class _Fire:
    job_id: str
    due: datetime
    attempt: int
    status: str
    event_key: str | None = None
    detail: str | None = None
    retry_at: datetime | None = None
    fired_at: datetime = field(default_factory=utcnow)


@dataclass
class _JobState(Generic[T]):
    jobs: dict[str, Job[T]] = field(default_factory=dict)
    fires: list[_Fire] = field(default_factory=list)


@dataclass(frozen=True)
class _Change:
    """A change of :class:`FakeJobs`: applied to the state; False when its guard stops the commit."""

    apply: Callable[[_JobState[Any]], bool]
    name: str


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class FakeJobs(Generic[T]):
    """:class:`~bot.store.ports.JobRepo` in memory. A commit applies its changes to a copy of the state and keeps it
    only when no guard stopped it (all or nothing, like a transaction). ``outcomes`` is what :meth:`outcome` says
    of a started fire's event (a test sets it: the run ended ``done``, ``failed``…); ``outbox`` and ``inbox`` list
    what commits enqueued."""

    def __init__(self) -> None:
        self.state: _JobState[T] = _JobState()
        self.outbox: list[tuple[str, str]] = []
        self.inbox: list[tuple[str, str, str]] = []
        self.outcomes: dict[str, str | None] = {}
        self._ids = 0

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
    ) -> Job[T]:
        live = [j for j in self.state.jobs.values() if j.status in LIVE]
        in_chat = sum(j.chat_key == chat_key for j in live)
        if in_chat >= max_per_chat:
            raise JobLimit(f"this chat has {in_chat} jobs, the most it may have (jobs.max_per_chat)")
        of_owner = sum(j.owner == owner for j in live)
        if of_owner >= max_per_user:
            raise JobLimit(f"you have {of_owner} jobs, the most one person may have (jobs.max_per_user)")
        self._ids += 1
        job = Job(
            f"job{self._ids}", chat_key, owner, name, trigger, "prompt" if action == "prompt" else "message", text,
            agent, "active", _aware(first), None, 0, _aware(utcnow()),
        )  # fmt: skip
        self.state.jobs[job.id] = job
        return job

    async def get(self, job_id: str) -> Job[T] | None:
        return self.state.jobs.get(job_id)

    def _live(self, which: Callable[[Job[T]], bool], limit: int = 1000) -> list[Job[T]]:
        jobs = [j for j in self.state.jobs.values() if j.status in LIVE and which(j)]
        far = datetime.max.replace(tzinfo=UTC)
        return sorted(jobs, key=lambda j: (j.next_fire_at or far, j.id))[:limit]

    async def of_chat(self, chat_key: str) -> list[Job[T]]:
        return self._live(lambda j: j.chat_key == chat_key)

    async def of_owner(self, owner: str) -> list[Job[T]]:
        return self._live(lambda j: j.owner == owner)

    async def live(self, limit: int = 200) -> list[Job[T]]:
        return self._live(lambda j: True, limit)

    async def due(self, now: datetime, limit: int = 100) -> list[Job[T]]:
        due = [
            j
            for j in self.state.jobs.values()
            if j.status == "active" and j.next_fire_at is not None and j.next_fire_at <= _aware(now)
        ]
        return sorted(due, key=lambda j: j.next_fire_at or now)[:limit]

    async def soonest(self) -> datetime | None:
        times = [j.next_fire_at for j in self.state.jobs.values() if j.status == "active" and j.next_fire_at]
        return min(times) if times else None

    async def set_status(
        self, job_id: str, status: str, *, was: Sequence[str], next_fire: datetime | None = None
    ) -> bool:
        job = self.state.jobs.get(job_id)
        if job is None or job.status not in was:
            return False
        fire_at = _aware(next_fire) if next_fire else job.next_fire_at
        self.state.jobs[job_id] = replace(job, status=status, next_fire_at=fire_at)
        return True

    # -- changes ----------------------------------------------------------------------------------------------

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
    ) -> list[Change]:
        when = _aware(fired or due)

        def claim(state: _JobState[Any]) -> bool:
            now = state.jobs.get(job.id)
            if now is None or now.status != "active" or now.next_fire_at != _aware(due):
                return False
            state.jobs[job.id] = replace(
                now,
                next_fire_at=_aware(following) if following else None,
                last_fire_at=when,
                fires=now.fires + 1,
                status="active" if following else "done",
            )
            state.fires.append(_Fire(job.id, when, attempt, status, event_key, detail))
            return True

        return [_Change(claim, "claim")]

    def move_step(self, job_id: str, due: datetime, following: datetime | None) -> Change:
        def move(state: _JobState[Any]) -> bool:
            job = state.jobs.get(job_id)
            if job is None or job.status != "active" or job.next_fire_at != _aware(due):
                return False
            moved = _aware(following) if following else None
            state.jobs[job_id] = replace(job, next_fire_at=moved, status="active" if following else "done")
            return True

        return _Change(move, "move")

    def pause_step(self, job_id: str, due: datetime) -> Change:
        def pause(state: _JobState[Any]) -> bool:
            job = state.jobs.get(job_id)
            if job is None or job.status != "active" or job.next_fire_at != _aware(due):
                return False
            state.jobs[job_id] = replace(job, status="paused")
            return True

        return _Change(pause, "pause")

    def _fire_change(self, job_id: str, due: datetime, attempt: int, was: str, guard: bool, **to: Any) -> Change:
        def change(state: _JobState[Any]) -> bool:
            for fire in state.fires:
                if (fire.job_id, fire.due, fire.attempt, fire.status) == (job_id, _aware(due), attempt, was):
                    for name, value in to.items():
                        setattr(fire, name, value)
                    return True
            return not guard

        return _Change(change, f"{was} → {to.get('status')}")

    def settle_step(self, job_id: str, due: datetime, attempt: int, status: str, detail: str | None = None) -> Change:
        return self._fire_change(job_id, due, attempt, "started", True, status=status, detail=detail)

    def retry_step(self, job_id: str, due: datetime, attempt: int, at: datetime) -> Change:
        def retry(state: _JobState[Any]) -> bool:
            state.fires.append(_Fire(job_id, _aware(due), attempt, "retry", retry_at=_aware(at)))
            return True

        return _Change(retry, "retry")

    def drop_retry_step(self, job_id: str, due: datetime, attempt: int) -> Change:
        return self._fire_change(job_id, due, attempt, "retry", False, status="dropped")

    def start_retry_step(self, job_id: str, due: datetime, attempt: int, event_key: str) -> Change:
        return self._fire_change(job_id, due, attempt, "retry", True, status="started", event_key=event_key)

    async def commit(
        self,
        changes: Sequence[Change],
        *,
        outbox: tuple[str, str] | None = None,
        inbox: tuple[str, str, str] | None = None,
    ) -> Committed:
        state = copy.deepcopy(self.state)
        for change in changes:
            if not isinstance(change, _Change):
                raise TypeError(f"not a change of this repository: {change!r}")
            if not change.apply(state):
                return Committed(False)
        if inbox is not None and any(key == inbox[0] for key, _c, _e in self.inbox):
            return Committed(False)  # the event was stored before
        self.state = state
        if inbox is not None:
            self.inbox.append(inbox)
        if outbox is None:
            return Committed(True)
        self.outbox.append(outbox)
        return Committed(True, len(self.outbox))

    # -- fires ------------------------------------------------------------------------------------------------

    async def started(self) -> list[tuple[str, datetime, int, str]]:
        fires = sorted((f for f in self.state.fires if f.status == "started"), key=lambda f: f.fired_at)
        return [(f.job_id, f.due, f.attempt, f.event_key or "") for f in fires]

    async def outcome(self, event_key: str) -> str | None:
        return self.outcomes.get(event_key)

    async def due_retries(self, now: datetime) -> list[tuple[str, datetime, int]]:
        fires = [f for f in self.state.fires if f.status == "retry" and f.retry_at and f.retry_at <= _aware(now)]
        return [(f.job_id, f.due, f.attempt) for f in sorted(fires, key=lambda f: f.retry_at or now)]

    async def fires(self, job_id: str) -> list[tuple[datetime, int, str, str | None]]:
        fires = sorted((f for f in self.state.fires if f.job_id == job_id), key=lambda f: (f.due, f.attempt))
        return [(f.due, f.attempt, f.status, f.detail) for f in fires]


def stored_json(outbox: list[tuple[str, str]]) -> list[str]:
    """The texts of outbox rows (message JSON)."""
    return [json.loads(message)["text"] for _chat, message in outbox]


__all__ = ["FakeJobs", "FakeScheduled", "FakeTraces", "FakeWebSessions", "stored_json"]
