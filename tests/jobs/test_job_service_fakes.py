"""The job service's logic on the in-memory job repository (``tests/fakes/repos.py``): no database, a clock the test
moves. What a fire commits (the claim with its message or event) and what follows a run's end (settled, retried,
told) are read from the fake's state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.clock import FakeClock
from bot.config.jobs import JobsSection
from bot.events import ChatKey, InboundMessage, OutboundMessage
from bot.jobs.service import JobService
from bot.jobs.triggers import Trigger
from tests.fakes.repos import FakeJobs, stored_json

CHAT = ChatKey(channel="console", chat_id="c1")
START = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)


class World:
    """A fake job repository shared by the services made on it, and what they delivered and published."""

    def __init__(self) -> None:
        self.clock = FakeClock(START)
        self.jobs: FakeJobs[Trigger] = FakeJobs()
        self.delivered: list[tuple[int, str]] = []
        self.published: list[InboundMessage] = []

    def service(self, **config: Any) -> JobService:
        async def deliver(outbox_id: int, message: OutboundMessage) -> None:
            self.delivered.append((outbox_id, message.text))

        async def publish(event: InboundMessage) -> None:
            self.published.append(event)

        async def zone_of(chat: ChatKey) -> str:
            return "UTC"

        return JobService(
            JobsSection(**config), self.jobs, deliver=deliver, publish=publish, zone_of=zone_of, clock=self.clock
        )


async def test_a_message_job_fires_once_however_many_services_see_it_due() -> None:
    world = World()
    one, two = world.service(), world.service()
    job = await one.create(CHAT, "console:u1", name="tea", action="message", text="tea time", cron="0 8 * * *")
    assert await one.tick() == 0, "not due yet"
    await world.clock.advance(3600)
    assert [await s.tick() for s in (one, two, one)] == [1, 0, 0]
    assert world.delivered == [(1, "⏰ tea time")] and stored_json(world.jobs.outbox) == ["⏰ tea time"]
    [(_due, attempt, status, _detail)] = await world.jobs.fires(job.id)
    assert (attempt, status) == (0, "done")
    fired = await world.jobs.get(job.id)
    assert fired is not None and fired.next_fire_at == START + timedelta(days=1, hours=1)


async def test_a_failed_prompt_run_is_told_retried_and_then_settled() -> None:
    world = World()
    service = world.service()
    job = await service.create(CHAT, "console:u1", name="news", action="prompt", text="news?", at="2026-11-26T08:00")
    await world.clock.advance(3600)
    assert await service.tick() == 1
    [event] = world.published
    assert event.text == "news?" and [key for key, _c, _e in world.jobs.inbox] == [f"console:{event.id}"]
    world.jobs.outcomes[f"console:{event.id}"] = "failed"
    await service.tick()
    assert stored_json(world.jobs.outbox) == [
        f"⚠️ Job {job.id} (news) did not finish (failed); I will try again in 5 min (try 2 of 3)."
    ]
    await world.clock.advance(300)
    assert await service.tick() == 1, "the retry starts its run"
    retried = world.published[-1]
    world.jobs.outcomes[f"console:{retried.id}"] = "done"
    await service.tick()
    assert [(a, s) for _due, a, s, _d in await world.jobs.fires(job.id)] == [(0, "failed"), (1, "done")]
    assert (await world.jobs.get(job.id)) is not None and len(world.jobs.outbox) == 1, "done is not announced"
