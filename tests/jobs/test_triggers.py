"""Job triggers: cron in a time zone across both DST changes, intervals, one-shot times, validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.jobs.triggers import Trigger, TriggerError

BERLIN = ZoneInfo("Europe/Berlin")


def fires(trigger: Trigger, start: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    fired: datetime | None = None
    now = start
    for _ in range(count):
        fired = trigger.next_after(fired, now)
        assert fired is not None
        out.append(fired)
        now = fired
    return out


def test_weekdays_at_eight_local() -> None:
    trigger = Trigger.cron("0 8 * * mon-fri", "Europe/Berlin")
    got = fires(trigger, datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN), 4)  # a Thursday, after 08:00
    assert [f.astimezone(BERLIN).strftime("%a %d %H:%M") for f in got] == [
        "Fri 27 08:00", "Mon 30 08:00", "Tue 01 08:00", "Wed 02 08:00"
    ]  # fmt: skip


def test_daily_stays_at_local_time_across_spring_forward() -> None:
    trigger = Trigger.cron("0 8 * * *", "Europe/Berlin")
    got = fires(trigger, datetime(2026, 3, 28, 9, 0, tzinfo=BERLIN), 2)
    assert [f.astimezone(UTC).strftime("%d %H:%M") for f in got] == ["29 06:00", "30 06:00"]  # CEST: UTC+2
    assert all(f.astimezone(BERLIN).hour == 8 for f in got)


def test_a_missing_local_time_fires_once() -> None:
    trigger = Trigger.cron("30 2 * * *", "Europe/Berlin")  # 02:30 does not exist on 2026-03-29
    got = fires(trigger, datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN), 3)
    days = [f.astimezone(BERLIN).day for f in got]
    assert days == [29, 30, 31], "once a day, the night the clocks go forward too"


def test_a_repeated_local_time_fires_once() -> None:
    trigger = Trigger.cron("30 2 * * *", "Europe/Berlin")  # 02:30 happens twice on 2026-10-25
    got = fires(trigger, datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN), 3)
    assert [f.astimezone(UTC).strftime("%d %H:%M") for f in got] == ["25 00:30", "26 01:30", "27 01:30"]


def test_hourly_cron_keeps_every_real_hour_when_clocks_go_back() -> None:
    trigger = Trigger.cron("0 * * * *", "Europe/Berlin")
    got = fires(trigger, datetime(2026, 10, 25, 1, 30, tzinfo=BERLIN), 4)
    gaps = {(b - a).total_seconds() for a, b in zip(got, got[1:], strict=False)}
    assert gaps == {3600.0}, "02:00 CEST, 02:00 CET, 03:00, 04:00: every real hour once"


def test_interval_anchored_and_not_shifted_by_dst() -> None:
    start = datetime(2026, 10, 24, 22, 0, tzinfo=BERLIN).astimezone(UTC)  # (aware arithmetic is wall time)
    trigger = Trigger.every(6 * 3600, "Europe/Berlin", start)
    got = fires(trigger, start - timedelta(minutes=5), 4)
    assert [(f - start).total_seconds() / 3600 for f in got] == [0, 6, 12, 18]
    # After downtime the next fire is the next step of the grid, not "now".
    later = start + timedelta(hours=13)
    assert trigger.next_after(got[1], later) == start + timedelta(hours=18)
    assert trigger.shortest_gap(start) == 6 * 3600
    assert trigger.describe() == "every 6 hours"


def test_once_local_time_and_no_second_fire() -> None:
    trigger = Trigger.once("2026-12-01T08:00", "Europe/Berlin")
    now = datetime(2026, 11, 26, tzinfo=UTC)
    first = trigger.next_after(None, now)
    assert first == datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    assert trigger.next_after(first, first) is None
    assert trigger.next_after(None, first + timedelta(minutes=1)) is None, "its time has passed"
    assert trigger.describe() == "once at 2026-12-01 08:00 (Europe/Berlin)"
    assert trigger.shortest_gap(now) is None


def test_shortest_gap_of_a_cron_expression() -> None:
    now = datetime(2026, 11, 26, tzinfo=UTC)
    assert Trigger.cron("*/5 * * * *", "UTC").shortest_gap(now) == 300
    assert Trigger.cron("0 8,9 * * *", "UTC").shortest_gap(now) == 3600


def test_round_trip_through_json() -> None:
    start = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    for trigger in (
        Trigger.cron("0 8 * * 1-5", "Asia/Tokyo"),
        Trigger.every(90, "UTC", start),
        Trigger.once("2026-12-01T08:00:00+09:00", "Asia/Tokyo"),
    ):
        assert Trigger.from_json(trigger.to_json()) == trigger


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Trigger.cron("0 25 * * *", "UTC"), "cannot read the cron expression '0 25 * * *'"),
        (lambda: Trigger.cron("every day", "UTC"), "five fields"),
        (lambda: Trigger.cron("0 8 * * *", "Mars/Olympus"), "unknown time zone 'Mars/Olympus'"),
        (lambda: Trigger.every(0, "UTC", datetime.now(UTC)), "positive number of seconds"),
        (lambda: Trigger.once("next tuesday", "UTC"), "cannot read the time 'next tuesday'"),
    ],
)
def test_bad_triggers_say_why(make: object, message: str) -> None:
    with pytest.raises(TriggerError, match=message.replace("*", r"\*").replace("(", r"\(")):
        make()  # type: ignore[operator]
