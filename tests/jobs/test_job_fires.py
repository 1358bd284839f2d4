"""The job service on a store and a clock the test moves: fires at local time on the nights the clocks change
(its own timer running), the missed-fire notice after years away names the real last fire and the count, jobs
stored under the old reading of cron expressions are moved on or paused (never crash a pass)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.clock import FakeClock
from bot.config.jobs import JobsSection
from bot.events import ChatKey, InboundMessage, OutboundMessage
from bot.jobs.service import JobService
from bot.jobs.triggers import Trigger
from bot.store.sql.repos.jobs import JobStore
from bot.store.sql.store import SqlStore
from tests.helpers.jobs import BERLIN

CHAT = ChatKey(channel="console", chat_id="c1")


class Sent:
    """What the services delivered, with the (fake) time each was delivered at."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.messages: list[tuple[datetime, str]] = []

    def service(self, store: SqlStore, **config: Any) -> JobService:
        async def deliver(outbox_id: int, message: OutboundMessage) -> None:
            self.messages.append((self.clock.now(), message.text))

        async def publish(event: InboundMessage) -> None:
            raise AssertionError("no prompt jobs here")

        async def zone_of(chat: ChatKey) -> str:
            return "Europe/Berlin"

        return JobService(
            JobsSection(**config),
            JobStore(store, Trigger),
            deliver=deliver,
            publish=publish,
            zone_of=zone_of,
            clock=self.clock,
        )

    def texts(self) -> list[str]:
        return [text for _at, text in self.messages]


async def opened(tmp_path: Path) -> SqlStore:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    return store


async def test_midnight_jobs_fire_at_local_midnight_through_the_spring_forward_with_the_timer_running(
    tmp_path: Path,
) -> None:
    clock = FakeClock(datetime(2026, 3, 27, 12, 0, tzinfo=BERLIN))
    sent = Sent(clock)
    store = await opened(tmp_path)
    service = sent.service(store, min_interval_s=0)
    try:
        await service.create(CHAT, "console:u1", name="m", action="message", text="midnight", cron="0 0 * * *")
        await service.create(CHAT, "console:u1", name="s", action="message", text="sunday", cron="0 3 * * 0")
        service.start()
        await clock.armed()
        for _ in range(4 * 24 * 4):  # four days in 15-minute steps; the service's own timer fires the jobs
            await clock.advance(900)
            await clock.armed()  # its pass over the store is done: it sleeps again
        await store.flush()
    finally:
        await service.stop()
        await store.close()
    fired = [(at.astimezone(BERLIN).strftime("%a %d %H:%M:%S%z"), text) for at, text in sent.messages]
    assert fired == [
        ("Sat 28 00:00:00+0100", "⏰ midnight"),
        ("Sun 29 00:00:00+0100", "⏰ midnight"),
        ("Sun 29 03:00:00+0200", "⏰ sunday"),
        ("Mon 30 00:00:00+0200", "⏰ midnight"),
        ("Tue 31 00:00:00+0200", "⏰ midnight"),
    ], "on time, once each, Monday after the clocks went forward included; 0 = Sunday"


async def test_after_years_away_the_notice_names_the_last_missed_fire_and_how_many(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))
    sent = Sent(clock)
    store = await opened(tmp_path)
    service = sent.service(store)
    try:
        job = await service.create(CHAT, "console:u1", name="water", action="message", text="water", cron="0 8 * * *")
        await clock.advance_to(datetime(2035, 2, 12, 12, 0, tzinfo=BERLIN))  # down for over eight years
        assert await service.tick() == 1
        assert await service.tick() == 0
        missed = (datetime(2035, 2, 12) - datetime(2026, 11, 27)).days + 1
        assert sent.texts() == [
            f"⏰ Job {job.id} (water) missed {missed:,} fires while I was offline (the last at 2035-02-12 08:00); "
            "next: 2035-02-13 08:00."
        ]
        [(due, _attempt, status, detail)] = await service.jobs.fires(job.id)
        assert (due, status, detail) == (datetime(2035, 2, 12, 7, 0, tzinfo=UTC), "missed", f"{missed} missed")
        after = await service.jobs.get(job.id)
        assert after is not None and after.last_fire_at == due
        assert after.next_fire_at == datetime(2035, 2, 13, 7, 0, tzinfo=UTC)
    finally:
        await store.close()


async def add_stored(service: JobService, trigger: dict[str, str], first: datetime) -> str:
    """A job row as an older version stored it (its trigger JSON and next fire as they were)."""
    job = await service.jobs.add(
        chat_key=str(CHAT), owner="console:u1", name="old", trigger=Trigger.from_json(trigger), action="message",
        text="stand-up", agent=None, first=first, max_per_chat=5, max_per_user=5,
    )  # fmt: skip
    return job.id


async def test_a_job_stored_under_monday_zero_moves_to_its_crontab_days_without_a_stray_fire(tmp_path: Path) -> None:
    # APScheduler read "1-5" as Tuesday to Saturday and stored Saturday 08:00 as the next fire.
    saturday = datetime(2026, 11, 28, 8, 0, tzinfo=BERLIN)
    clock = FakeClock(saturday - timedelta(hours=1))
    sent = Sent(clock)
    store = await opened(tmp_path)
    service = sent.service(store)
    try:
        job_id = await add_stored(
            service, {"kind": "cron", "spec": "0 8 * * 1-5", "timezone": "Europe/Berlin"}, saturday
        )
        await clock.advance_to(saturday + timedelta(seconds=5))
        assert await service.tick() == 0 and sent.texts() == [], "Saturday is no weekday"
        job = await service.jobs.get(job_id)
        assert job is not None and job.next_fire_at == datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "Monday 08:00"
        await clock.advance_to(datetime(2026, 11, 30, 8, 0, 5, tzinfo=BERLIN))
        assert await service.tick() == 1 and sent.texts() == ["⏰ stand-up"]
    finally:
        await store.close()


async def test_a_skipped_time_stored_as_apschedulers_answer_still_fires_that_night(tmp_path: Path) -> None:
    stored = datetime(2026, 3, 29, 3, 30, tzinfo=BERLIN)  # APScheduler's time for 02:30; cron's is 03:00
    clock = FakeClock(stored + timedelta(seconds=5))
    sent = Sent(clock)
    store = await opened(tmp_path)
    service = sent.service(store)
    try:
        job_id = await add_stored(service, {"kind": "cron", "spec": "30 2 * * *", "timezone": "Europe/Berlin"}, stored)
        assert await service.tick() == 1
        assert sent.texts() == ["⏰ stand-up\n(late: I was offline when this was due)"], "once, that night"
        [(due, _attempt, status, _detail)] = await service.jobs.fires(job_id)
        assert (due, status) == (datetime(2026, 3, 29, 1, 0, tzinfo=UTC), "done"), "03:00 CEST, the fire it stood for"
        job = await service.jobs.get(job_id)
        assert job is not None and job.next_fire_at == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)
    finally:
        await store.close()


async def test_a_stored_expression_that_cannot_be_read_pauses_its_job_and_says_so_once(tmp_path: Path) -> None:
    due = datetime(2026, 11, 30, 8, 0, tzinfo=BERLIN)
    clock = FakeClock(due + timedelta(seconds=5))
    sent = Sent(clock)
    store = await opened(tmp_path)
    one, two = sent.service(store), sent.service(store)
    try:
        unreadable = {"kind": "cron", "spec": "0 8 last * *", "timezone": "Europe/Berlin"}  # APScheduler's "last"
        job_id = await add_stored(one, unreadable, due)
        readable = await one.create(CHAT, "console:u1", name="ok", action="message", text="fine", cron="0 8 * * *")
        await store.write([one.jobs.move_step(readable.id, readable.next_fire_at or due, due)])
        made = await asyncio.gather(one.tick(), two.tick(), one.tick())
        assert sum(made) == 1, "the readable job fires once; the pass is not stopped by the other"
        [notice] = [t for t in sent.texts() if t.startswith("⚠️")]
        assert notice.startswith(f"⚠️ Job {job_id} (old) is paused: its schedule cron '0 8 last * *' (Europe/Berlin), ")
        assert "can no longer be read" in notice and f"/jobs delete {job_id}" in notice
        assert sent.texts().count("⏰ fine") == 1
        job = await one.jobs.get(job_id)
        assert job is not None and job.status == "paused"
        [listed] = [j for j in await one.jobs.of_chat(str(CHAT)) if j.id == job_id]
        assert "can no longer be read" in listed.trigger.describe()
        rows = await store.read("SELECT trigger FROM jobs WHERE id = ?", (job_id,))
        assert json.loads(rows[0][0])["spec"] == "0 8 last * *", "kept as it was, for its owner to see"
    finally:
        await store.close()
