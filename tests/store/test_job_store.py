"""The jobs tables on SQLite and PostgreSQL: limits checked in the insert, a fire claimed once however many
try, one-time jobs done after their fire, pause and resume, what is due."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.jobs.triggers import Trigger
from bot.store.sql.repos.jobs import JobLimit, JobStore

NOW = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)


async def add(jobs: JobStore[Trigger], *, chat: str = "console:c1", owner: str = "console:u1", **kw: Any) -> Any:
    trigger = kw.pop("trigger", Trigger.cron("0 8 * * *", "Europe/Berlin"))
    return await jobs.add(
        chat_key=chat,
        owner=owner,
        name=kw.pop("name", "daily"),
        trigger=trigger,
        action=kw.pop("action", "message"),
        text=kw.pop("text", "stand-up in 5"),
        agent=kw.pop("agent", None),
        first=kw.pop("first", trigger.next_after(None, NOW)),
        max_per_chat=kw.pop("max_per_chat", 3),
        max_per_user=kw.pop("max_per_user", 4),
    )


async def test_add_read_and_limits(make_store: Any) -> None:
    jobs = JobStore(await make_store(), Trigger)
    job = await add(jobs)
    assert job.status == "active" and job.fires == 0
    assert job.next_fire_at == datetime(2026, 11, 26, 7, 0, tzinfo=UTC), "08:00 Berlin is 07:00 UTC in winter"
    assert job.trigger == Trigger.cron("0 8 * * *", "Europe/Berlin")
    assert [j.id for j in await jobs.of_chat("console:c1")] == [job.id]
    await add(jobs)
    await add(jobs)
    with pytest.raises(JobLimit, match="this chat has 3 jobs"):
        await add(jobs)
    await add(jobs, chat="console:c2")
    with pytest.raises(JobLimit, match="you have 4 jobs"):
        await add(jobs, chat="console:c3")
    assert await jobs.set_status(job.id, "deleted", was=("active", "paused"))
    await add(jobs)  # a deleted job no longer counts
    assert len(await jobs.of_owner("console:u1")) == 4


async def test_a_fire_is_claimed_once(make_store: Any) -> None:
    store = await make_store()
    jobs = JobStore(store, Trigger)
    job = await add(jobs)
    due = job.next_fire_at
    following = job.trigger.next_after(due, due)
    assert following == due + timedelta(days=1)
    results = await asyncio.gather(
        *(store.write(jobs.claim_steps(job, due, following, status="done")) for _ in range(5))
    )
    assert sum(r.ok for r in results) == 1
    again = await jobs.get(job.id)
    assert again is not None and again.fires == 1 and again.next_fire_at == following and again.last_fire_at == due
    assert [(f[1], f[2]) for f in await jobs.fires(job.id)] == [(0, "done")]
    assert await jobs.due(NOW + timedelta(hours=2)) == []
    assert [j.id for j in await jobs.due(following)] == [job.id]
    assert await jobs.soonest() == following


async def test_one_time_job_is_done_after_its_fire_and_pause_resume(make_store: Any) -> None:
    store = await make_store()
    jobs = JobStore(store, Trigger)
    once = await add(jobs, trigger=Trigger.once("2026-12-01T08:00", "UTC"), name="once")
    assert (await store.write(jobs.claim_steps(once, once.next_fire_at, None, status="done"))).ok
    done = await jobs.get(once.id)
    assert done is not None and done.status == "done" and done.next_fire_at is None
    assert not await jobs.of_chat("console:c1")
    daily = await add(jobs)
    assert await jobs.set_status(daily.id, "paused", was=("active",))
    assert not await jobs.set_status(daily.id, "paused", was=("active",)), "only once"
    assert await jobs.due(NOW + timedelta(days=5)) == [], "a paused job is not due"
    later = NOW + timedelta(days=3)
    assert await jobs.set_status(daily.id, "active", was=("paused",), next_fire=later)
    resumed = await jobs.get(daily.id)
    assert resumed is not None and resumed.next_fire_at == later
    claimed = jobs.claim_steps(resumed, NOW, NOW + timedelta(days=1), status="done")
    assert not (await store.write(claimed)).ok, "a stale due time claims nothing"


async def test_two_processes_fire_a_job_once(make_store: Any) -> None:
    """Two job services (as two workers) on one database see the same fire due; one makes it."""
    from bot.clock import FakeClock
    from bot.config.jobs import JobsSection
    from bot.events import ChatKey, InboundMessage, OutboundMessage
    from bot.jobs.service import JobService

    sent: list[tuple[str, OutboundMessage]] = []
    published: list[InboundMessage] = []
    clock = FakeClock(datetime(2026, 11, 26, 7, 0, 30, tzinfo=UTC))

    def service(store: Any, name: str) -> JobService:
        async def deliver(outbox_id: int, message: OutboundMessage) -> None:
            sent.append((name, message))

        async def publish(event: InboundMessage) -> None:
            published.append(event)

        async def zone_of(chat: ChatKey) -> str:
            return "Europe/Berlin"

        return JobService(
            JobsSection(), JobStore(store, Trigger), deliver=deliver, publish=publish, zone_of=zone_of, clock=clock
        )

    first = await make_store()
    one, two = service(first, "one"), service(await make_store(), "two")
    chat = ChatKey(channel="console", chat_id="c1")
    await one.jobs.add(
        chat_key=str(chat), owner="console:u1", name="m", trigger=Trigger.cron("0 8 * * *", "Europe/Berlin"),
        action="message", text="morning", agent=None, first=NOW, max_per_chat=5, max_per_user=5,
    )  # fmt: skip
    await two.jobs.add(
        chat_key=str(chat), owner="console:u1", name="p", trigger=Trigger.cron("0 8 * * *", "Europe/Berlin"),
        action="prompt", text="news?", agent="react", first=NOW, max_per_chat=5, max_per_user=5,
    )  # fmt: skip
    made = await asyncio.gather(*(s.tick() for s in (one, two, one, two)))
    assert sum(made) == 2, "each job's fire once"
    assert [m.text for _who, m in sent] == ["⏰ morning"]
    assert [e.text for e in published] == ["@react news?"]
    store = first
    [(outbox,)] = await store.read("SELECT COUNT(*) FROM outbox")
    [(inbox,)] = await store.read("SELECT COUNT(*) FROM inbox WHERE event_key LIKE 'console:job:%'")
    assert (int(outbox), int(inbox)) == (1, 1)
