"""The ``jobs`` and ``job_fires`` tables (migration 0010).

A job's ``next_fire_at`` is the claim token: :meth:`JobStore.claim_steps` moves it from the due time to the
next one under a guard, in the same transaction that records the fire (and, by the caller, enqueues the
fire's action), so each fire happens once however many processes saw it due. Times are naive UTC here, as in
every table; :class:`Job` hands them out aware.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from bot.ids import new_id
from bot.store.sql.ops import Step, outbox_step, steps_of
from bot.store.sql.store import SqlStore
from bot.store.values import LIVE, Change, Committed, Job, JobLimit, StoredTrigger, TriggerReader, utcnow

__all__ = ["LIVE", "Job", "JobLimit", "JobStore"]

T = TypeVar("T", bound=StoredTrigger)

_COLUMNS = (
    "id, chat_key, owner, name, trigger, action, text, agent, status, next_fire_at, last_fire_at, fires, created_at"
)


class JobStore(Generic[T]):
    """:class:`~bot.store.ports.JobRepo` on the SQL store; ``triggers`` reads the stored schedules."""

    def __init__(self, store: SqlStore, triggers: TriggerReader[T]) -> None:
        self.store = store
        self.triggers = triggers

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
        """Store a new active job firing first at ``first``; :class:`JobLimit` when a limit is reached (checked
        in the insert itself, so two requests at once cannot both pass it)."""
        job_id, now = new_id(8), utcnow()
        live = ", ".join(f"'{s}'" for s in LIVE)
        result = await self.store.write(
            [
                Step(
                    f"INSERT INTO jobs ({_COLUMNS}, updated_at) "
                    "SELECT ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, NULL, 0, ?, ? "
                    f"WHERE (SELECT COUNT(*) FROM jobs WHERE chat_key = ? AND status IN ({live})) < ? "
                    f"AND (SELECT COUNT(*) FROM jobs WHERE owner = ? AND status IN ({live})) < ?",
                    (
                        job_id, chat_key, owner, name, json.dumps(trigger.to_json()), action, text, agent,
                        _naive(first), now, now, chat_key, max_per_chat, owner, max_per_user,
                    ),
                    guard=True,
                )
            ]
        )  # fmt: skip
        if not result.ok:
            chat_count, owner_count = await self._counts(chat_key, owner)
            if chat_count >= max_per_chat:
                raise JobLimit(f"this chat has {chat_count} jobs, the most it may have (jobs.max_per_chat)")
            raise JobLimit(f"you have {owner_count} jobs, the most one person may have (jobs.max_per_user)")
        job = await self.get(job_id)
        assert job is not None
        return job

    async def _counts(self, chat_key: str, owner: str) -> tuple[int, int]:
        live = ", ".join(f"'{s}'" for s in LIVE)
        rows = await self.store.read(
            f"SELECT (SELECT COUNT(*) FROM jobs WHERE chat_key = ? AND status IN ({live})), "
            f"(SELECT COUNT(*) FROM jobs WHERE owner = ? AND status IN ({live}))",
            (chat_key, owner),
        )
        return int(rows[0][0]), int(rows[0][1])

    async def get(self, job_id: str) -> Job[T] | None:
        rows = await self.store.read(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return self._job(rows[0]) if rows else None

    async def of_chat(self, chat_key: str) -> list[Job[T]]:
        return await self._select("chat_key = ?", (chat_key,))

    async def of_owner(self, owner: str) -> list[Job[T]]:
        return await self._select("owner = ?", (owner,))

    async def live(self, limit: int = 200) -> list[Job[T]]:
        """Every active or paused job (admins' ``/jobs all``), the soonest first."""
        return await self._select("1 = 1", (), limit)

    async def _select(self, where: str, params: tuple[Any, ...], limit: int = 1000) -> list[Job[T]]:
        live = ", ".join(f"'{s}'" for s in LIVE)
        rows = await self.store.read(
            f"SELECT {_COLUMNS} FROM jobs WHERE {where} AND status IN ({live}) ORDER BY next_fire_at, id LIMIT ?",
            (*params, limit),
        )
        return [self._job(r) for r in rows]

    async def due(self, now: datetime, limit: int = 100) -> list[Job[T]]:
        """Active jobs whose next fire is at or before ``now``, the most overdue first."""
        rows = await self.store.read(
            f"SELECT {_COLUMNS} FROM jobs WHERE status = 'active' AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?",
            (_naive(now), limit),
        )
        return [self._job(r) for r in rows]

    async def soonest(self) -> datetime | None:
        rows = await self.store.read("SELECT MIN(next_fire_at) FROM jobs WHERE status = 'active'")
        return _aware(rows[0][0]) if rows and rows[0][0] is not None else None

    async def set_status(
        self, job_id: str, status: str, *, was: Sequence[str], next_fire: datetime | None = None
    ) -> bool:
        """Move a job from one of ``was`` to ``status`` (resuming sets its next fire); False when it was not."""
        marks = ", ".join("?" * len(was))
        sql = f"UPDATE jobs SET status = ?, updated_at = ?{', next_fire_at = ?' if next_fire else ''} "
        params: tuple[Any, ...] = (status, utcnow(), *((_naive(next_fire),) if next_fire else ()))
        result = await self.store.write(
            [Step(sql + f"WHERE id = ? AND status IN ({marks})", (*params, job_id, *was), guard=True)]
        )
        return result.ok

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
        """Claim ``job``'s fire at ``due`` (its ``next_fire_at`` must still be ``due``), move it on to
        ``following`` (None: a one-time job is done), and record the fire as ``status``. ``fired``: the fire made
        (or missed) when it is a later one than ``due`` (the bot was down past several); it is the job's last fire
        and the fire row's time."""
        now, fired = utcnow(), fired or due
        return [
            Step(
                "UPDATE jobs SET next_fire_at = ?, last_fire_at = ?, fires = fires + 1, status = ?, updated_at = ? "
                "WHERE id = ? AND status = 'active' AND next_fire_at = ?",
                (_naive(following) if following else None, _naive(fired), "active" if following else "done", now,
                 job.id, _naive(due)),
                guard=True,
            ),
            self.fire_step(job.id, fired, attempt, status, event_key, detail),
        ]  # fmt: skip

    def move_step(self, job_id: str, due: datetime, following: datetime | None) -> Step:
        """Move an active job's next fire from ``due`` to ``following`` without firing (``due`` was reckoned by an
        older reading of its schedule); None: it has no further fire, so it is done."""
        return Step(
            "UPDATE jobs SET next_fire_at = ?, status = ?, updated_at = ? "
            "WHERE id = ? AND status = 'active' AND next_fire_at = ?",
            (_naive(following) if following else None, "active" if following else "done", utcnow(), job_id,
             _naive(due)),
            guard=True,
        )  # fmt: skip

    def pause_step(self, job_id: str, due: datetime) -> Step:
        """Pause an active job whose next fire is still ``due`` (its schedule cannot be read any more)."""
        return Step(
            "UPDATE jobs SET status = 'paused', updated_at = ? WHERE id = ? AND status = 'active' AND next_fire_at = ?",
            (utcnow(), job_id, _naive(due)),
            guard=True,
        )

    def fire_step(
        self, job_id: str, due: datetime, attempt: int, status: str, event_key: str | None, detail: str | None
    ) -> Step:
        return Step(
            "INSERT INTO job_fires (job_id, due_at, attempt, status, event_key, detail, fired_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (job_id, _naive(due), attempt, status, event_key, detail, utcnow()),
        )

    async def commit(
        self,
        changes: Sequence[Change],
        *,
        outbox: tuple[str, str] | None = None,
        inbox: tuple[str, str, str] | None = None,
    ) -> Committed:
        """Commit ``changes`` in one transaction with an outbox row ``(chat, message JSON)`` and an inbox event
        ``(event key, chat, event JSON)`` when given; not ``ok`` when a guard stopped it (another process claimed
        the fire first)."""
        steps = steps_of(changes)
        if outbox is not None:
            steps.append(outbox_step(*outbox))
        if inbox is not None:
            key, chat_key, event_json = inbox
            steps.append(self.store.receive_step(key, chat_key, "message", event_json))
        result = await self.store.write(steps)
        if not result.ok:
            return Committed(False)
        return Committed(True, int(result.rows[0][0]) if outbox is not None else None)

    # -- fires that ran an agent: their outcome and retries ---------------------------------------------

    async def started(self) -> list[tuple[str, datetime, int, str]]:
        """(job, due, attempt, event key) of fires whose agent run has not been seen to end."""
        rows = await self.store.read(
            "SELECT job_id, due_at, attempt, event_key FROM job_fires WHERE status = 'started' ORDER BY fired_at"
        )
        return [(str(j), _aware(d), int(a), str(k)) for j, d, a, k in rows]

    async def outcome(self, event_key: str) -> str | None:
        """How the run a fire started ended: ``done``, ``failed``, ``stopped``…; ``handled`` when its event was
        handled without a run (a command, nothing to route to); None while it is still on its way or running."""
        # The inbox row first: it is marked handled in the commit that records the run, so a run that exists
        # is seen by the read after it (the other order could miss a run committed in between).
        handled = await self.store.read("SELECT status FROM inbox WHERE event_key = ?", (event_key,))
        if not handled or handled[0][0] != "done":
            return None
        rows = await self.store.read(
            "SELECT status FROM runs WHERE correlation_id = ? ORDER BY created_at DESC LIMIT 1", (event_key,)
        )
        if not rows:
            return "handled"
        return None if rows[0][0] in ("running", "paused") else str(rows[0][0])

    def settle_step(self, job_id: str, due: datetime, attempt: int, status: str, detail: str | None = None) -> Step:
        return Step(
            "UPDATE job_fires SET status = ?, detail = ? WHERE job_id = ? AND due_at = ? AND attempt = ? "
            "AND status = 'started'",
            (status, detail, job_id, _naive(due), attempt),
            guard=True,
        )

    def retry_step(self, job_id: str, due: datetime, attempt: int, at: datetime) -> Step:
        """A further attempt of the fire at ``due``, to start at ``at``."""
        return Step(
            "INSERT INTO job_fires (job_id, due_at, attempt, status, retry_at, fired_at) "
            "VALUES (?, ?, ?, 'retry', ?, ?)",
            (job_id, _naive(due), attempt, _naive(at), utcnow()),
        )

    async def due_retries(self, now: datetime) -> list[tuple[str, datetime, int]]:
        rows = await self.store.read(
            "SELECT job_id, due_at, attempt FROM job_fires WHERE status = 'retry' AND retry_at <= ? ORDER BY retry_at",
            (_naive(now),),
        )
        return [(str(j), _aware(d), int(a)) for j, d, a in rows]

    def drop_retry_step(self, job_id: str, due: datetime, attempt: int) -> Step:
        return Step(
            "UPDATE job_fires SET status = 'dropped' WHERE job_id = ? AND due_at = ? AND attempt = ? "
            "AND status = 'retry'",
            (job_id, _naive(due), attempt),
        )

    def start_retry_step(self, job_id: str, due: datetime, attempt: int, event_key: str) -> Step:
        return Step(
            "UPDATE job_fires SET status = 'started', event_key = ?, fired_at = ? WHERE job_id = ? AND due_at = ? "
            "AND attempt = ? AND status = 'retry'",
            (event_key, utcnow(), job_id, _naive(due), attempt),
            guard=True,
        )

    def _job(self, row: Sequence[Any]) -> Job[T]:
        job_id, chat_key, owner, name, trigger, action, text, agent, status, next_at, last_at, fires, created = row
        return Job(
            str(job_id),
            str(chat_key),
            str(owner),
            str(name),
            self.triggers.from_json(json.loads(trigger)),
            action,
            str(text),
            agent,
            str(status),
            _aware(next_at) if next_at is not None else None,
            _aware(last_at) if last_at is not None else None,
            int(fires),
            _aware(created),
        )

    async def fires(self, job_id: str) -> list[tuple[datetime, int, str, str | None]]:
        """(due, attempt, status, detail) of every fire of the job, oldest first."""
        rows = await self.store.read(
            "SELECT due_at, attempt, status, detail FROM job_fires WHERE job_id = ? ORDER BY due_at, attempt",
            (job_id,),
        )
        return [(_aware(d), int(a), str(s), t) for d, a, s, t in rows]


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _aware(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
