"""One suite over every implementation of a repository port: the SQL one (SQLite and PostgreSQL) and the in-memory
fake unit tests use (``tests/fakes/repos.py``), so the fake is held to what the store does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.jobs.triggers import Trigger
from bot.store.ports import EvalRepo, JobRepo, PairingRepo, ScheduledRepo, TraceRepo, UsageRepo, WebSessionRepo
from bot.store.sql.repos.evals import SqlEvalRuns
from bot.store.sql.repos.jobs import JobLimit, JobStore
from bot.store.sql.repos.pairing import PairingStore
from bot.store.sql.repos.scheduled import SqlScheduled
from bot.store.sql.repos.traces import SqlTraces
from bot.store.sql.repos.usage import UsageStore
from bot.store.sql.repos.web_sessions import SqlWebSessions
from bot.store.sql.store import SqlStore
from bot.store.values import Spent
from tests.fakes.more_repos import FakeEvalRuns, FakePairing, FakeUsage
from tests.fakes.repos import FakeJobs, FakeScheduled, FakeTraces, FakeWebSessions

NOW = datetime(2026, 11, 26, 7, 0)


@pytest.fixture
async def repos(url_or_fake: str | None, open_store: Callable[..., Awaitable[SqlStore]]) -> Callable[[str], Any]:
    """``repos(name)``: the repository of that name, SQL (on each database) or fake."""
    if url_or_fake is None:
        fakes: dict[str, Callable[[], Any]] = {
            "sessions": FakeWebSessions, "traces": FakeTraces, "scheduled": FakeScheduled, "jobs": FakeJobs,
            "evals": FakeEvalRuns, "usage": FakeUsage, "pairing": FakePairing,
        }  # fmt: skip
        return lambda name: fakes[name]()
    store = await open_store(url_or_fake)
    sql = {
        "sessions": lambda: SqlWebSessions(store),
        "traces": lambda: SqlTraces(store),
        "scheduled": lambda: SqlScheduled(store),
        "jobs": lambda: JobStore(store, Trigger),
        "evals": lambda: SqlEvalRuns(store),
        "usage": lambda: UsageStore(store),
        "pairing": lambda: PairingStore(store),
    }
    return lambda name: sql[name]()


async def test_web_sessions_expire_and_end(repos: Callable[[str], Any]) -> None:
    sessions: WebSessionRepo = repos("sessions")
    await sessions.add("d1", "ada", NOW, NOW + timedelta(hours=1))
    assert await sessions.user("d1", NOW) == "ada"
    assert await sessions.user("d1", NOW + timedelta(hours=2)) is None, "expired"
    assert await sessions.user("nope", NOW) is None
    await sessions.add("d2", "bob", NOW + timedelta(hours=2), NOW + timedelta(hours=3))  # drops the expired one
    assert await sessions.user("d1", NOW) is None
    await sessions.remove("d2")
    assert await sessions.user("d2", NOW + timedelta(hours=2)) is None


def _row(n: int, chat: str, request: str, kind: str = "llm_call", at: datetime = NOW) -> tuple[Any, ...]:
    return (f"e{n}", chat, request, "r1", "chat", kind, f'{{"n": {n}}}', at)


async def test_trace_rows_by_request_and_chat(repos: Callable[[str], Any]) -> None:
    traces: TraceRepo = repos("traces")
    await traces.add([_row(1, "console:a", "q1", "route"), _row(2, "console:a", "q1"), _row(3, "console:b", "q9")])
    await traces.add([_row(4, "console:a", "q2", "route", NOW + timedelta(minutes=5)), _row(5, "console:a", "q1")])
    assert await traces.requests("console:a", 2) == ["q2", "q1"], "by their newest event, oldest first"
    assert await traces.requests("console:a", 1) == ["q1"]
    assert [r[0] for r in await traces.events("q1")] == ["e1", "e2", "e5"]
    assert [r[0] for r in await traces.events("q1", "console:b")] == []
    assert await traces.newest_chat() == "console:a"
    after = await traces.after("console:a", 0)
    assert [r[1] for r in after] == ["e1", "e2", "e4", "e5"]
    assert [r[1] for r in await traces.after("console:a", int(after[1][0]))] == ["e4", "e5"]
    routes = await traces.first_routes(NOW + timedelta(minutes=1))
    assert [chat for chat, _seq in routes] == ["console:a"]


async def test_scheduled_messages_are_sent_or_cancelled_once(repos: Callable[[str], Any]) -> None:
    scheduled: ScheduledRepo = repos("scheduled")
    room = (50, 100)
    await scheduled.add("s2", "console:a", "later", NOW + timedelta(hours=2), "u1", NOW, room)
    await scheduled.add("s1", "console:a", "soon", NOW + timedelta(hours=1), "u1", NOW, room)
    await scheduled.add("s3", "console:b", "other", NOW + timedelta(hours=3), "u2", NOW, room)
    assert [r[0] for r in await scheduled.pending()] == ["s1", "s2", "s3"]
    assert [r[0] for r in await scheduled.pending("console:b")] == ["s3"]
    assert await scheduled.get("s1") == ("console:a", "soon")
    assert await scheduled.cancel("console:b", "s1") is False, "another chat's message"
    assert await scheduled.cancel("console:a", "s1") is True
    assert await scheduled.cancel("console:a", "s1") is False
    first = await scheduled.send("s2", "console:a", '{"text": "later"}')
    assert first is not None and await scheduled.send("s2", "console:a", '{"text": "later"}') is None
    assert [r[0] for r in await scheduled.pending()] == ["s3"]


async def test_scheduled_messages_are_capped_per_chat_and_per_person(repos: Callable[[str], Any]) -> None:
    scheduled: ScheduledRepo = repos("scheduled")
    due = NOW + timedelta(hours=1)
    assert await scheduled.add("a1", "console:a", "x", due, "u1", NOW, (2, 3)) is None
    assert await scheduled.add("a2", "console:a", "x", due, "u2", NOW, (2, 3)) is None
    assert await scheduled.add("a3", "console:a", "x", due, "u1", NOW, (2, 3)) == (2, 1), "the chat is full"
    assert await scheduled.add("b1", "console:b", "x", due, "u1", NOW, (2, 3)) is None
    assert await scheduled.add("c1", "console:c", "x", due, "u1", NOW, (2, 3)) is None
    assert await scheduled.add("d1", "console:d", "x", due, "u1", NOW, (2, 3)) == (0, 3), "the person is"
    assert not await scheduled.cancel("console:a", "a1", "u2"), "not u2's"
    assert await scheduled.cancel("console:a", "a1", "u1")
    assert await scheduled.add("a4", "console:a", "x", due, "u2", NOW, (2, 3)) is None, "room again"
    assert sorted(r[0] for r in await scheduled.pending()) == ["a2", "a4", "b1", "c1"]


async def test_jobs_limits_claims_and_fires(repos: Callable[[str], Any]) -> None:
    jobs: JobRepo[Trigger] = repos("jobs")
    daily = Trigger.cron("0 8 * * *", "UTC")
    first = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    made = [
        await jobs.add(
            chat_key="console:a", owner="console:u1", name=f"j{i}", trigger=daily, action="message", text="hi",
            agent=None, first=first, max_per_chat=2, max_per_user=5,
        )
        for i in range(2)
    ]  # fmt: skip
    with pytest.raises(JobLimit):
        await jobs.add(
            chat_key="console:a", owner="console:u1", name="j3", trigger=daily, action="message", text="hi",
            agent=None, first=first, max_per_chat=2, max_per_user=5,
        )  # fmt: skip
    job = made[0]
    assert (await jobs.get(job.id)) == job and job.trigger == daily
    assert [j.id for j in await jobs.due(first)] == [made[0].id, made[1].id]
    assert await jobs.soonest() == first
    following = first + timedelta(days=1)
    claim = jobs.claim_steps(job, first, following, status="started", event_key="k1")
    won = await jobs.commit(claim, outbox=("console:a", '{"text": "hi"}'))
    assert won.ok and won.outbox_id is not None
    again = await jobs.commit(jobs.claim_steps(job, first, following, status="started", event_key="k1"))
    assert not again.ok, "a fire is claimed once"
    moved = await jobs.get(job.id)
    assert moved is not None and moved.next_fire_at == following and moved.fires == 1
    assert await jobs.started() == [(job.id, first, 0, "k1")]
    retry_at = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    settled = await jobs.commit(
        [jobs.settle_step(job.id, first, 0, "failed", "boom"), jobs.retry_step(job.id, first, 1, retry_at)]
    )
    assert settled.ok and await jobs.started() == []
    assert await jobs.due_retries(retry_at) == [(job.id, first, 1)]
    assert (await jobs.commit([jobs.start_retry_step(job.id, first, 1, "k2")])).ok
    assert [(a, s, d) for _due, a, s, d in await jobs.fires(job.id)] == [(0, "failed", "boom"), (1, "started", None)]
    assert await jobs.set_status(job.id, "paused", was=("active",))
    assert not await jobs.set_status(job.id, "paused", was=("active",))
    assert [j.id for j in await jobs.of_chat("console:a")] == [made[1].id, job.id]


async def test_eval_runs_newest_first_and_the_one_before(repos: Callable[[str], Any]) -> None:
    evals: EvalRepo = repos("evals")

    def line(run: str, suite: str, hours: int) -> tuple[Any, ...]:
        return (run, suite, "m", "done", 3, 1, 2, 0.66, 0.01, NOW + timedelta(hours=hours))

    await evals.add(line("r1", "smoke", 0), '{"n": 1}')
    await evals.add(line("r2", "smoke", 2), '{"n": 2}')
    await evals.add(line("r3", "other", 1), '{"n": 3}')
    assert [r[0] for r in await evals.recent(None, 10)] == ["r2", "r3", "r1"]
    assert [r[0] for r in await evals.recent("smoke", 1)] == ["r2"]
    assert await evals.data("r3") == '{"n": 3}' and await evals.data("nope") is None
    assert await evals.previous("smoke", "r2", NOW + timedelta(hours=2)) == '{"n": 1}'
    assert await evals.previous("smoke", "r1", NOW) is None


async def test_usage_adds_up_per_scope_and_period(repos: Callable[[str], Any]) -> None:
    usage: UsageRepo = repos("usage")
    await usage.add([Spent("user:a", "d1", 1, 10, 5, cost=0.5), Spent("user:b", "d1", 1, 100, 50)])
    await usage.add([Spent("user:a", "d1", 1, 10, 5, cost=0.5), Spent("chat:x", "d1", 2, 7, 3)])
    spent = await usage.spent(["user:a", "user:b"], ["d1", "d2"])
    assert spent[("user:a", "d1")] == Spent("user:a", "d1", 2, 20, 10, cost=1.0)
    assert set(spent) == {("user:a", "d1"), ("user:b", "d1")}
    assert [s.scope for s in await usage.top("user:", "d1")] == ["user:b", "user:a"]
    assert await usage.top("user:", "d2") == []


async def test_pairing_codes_are_used_once(repos: Callable[[str], Any]) -> None:
    pairing: PairingRepo = repos("pairing")
    code = await pairing.issue("telegram", "7", "Ada", "telegram:7", 60, max_pending=2)
    assert code is not None and await pairing.issue("telegram", "7", "Ada", "telegram:7", 60, 2) == code
    assert await pairing.issue("telegram", "8", "Bob", "telegram:8", 60, 2) is not None
    assert await pairing.issue("telegram", "9", "Cy", "telegram:9", 60, 2) is None, "the channel is full"
    assert await pairing.find(code.code.lower()) == code
    assert sorted(w.user_id for w in await pairing.waiting()) == ["7", "8"]
    assert await pairing.approve(code, "cli:admin", admin=True)
    assert not await pairing.approve(code, "cli:admin"), "used up"
    assert await pairing.find(code.code) is None
    assert await pairing.is_paired("telegram", "7") and await pairing.standing("telegram", "7") is True
    assert await pairing.standing("telegram", "8") is None
    assert await pairing.admin_channels() == {"telegram"}
    assert [p.account for p in await pairing.paired()] == ["telegram:7"]
    assert await pairing.unpair("telegram", "7") and not await pairing.unpair("telegram", "7")
    assert not await pairing.is_paired("telegram", "7") and await pairing.admin_channels() == set()
