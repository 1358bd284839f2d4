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


# -- the cases named in issue #43 ---------------------------------------------------------------------------------

YEARS_2026_2027 = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2028, 1, 1, tzinfo=UTC))


def local_fires(expression: str, zone_name: str, start: datetime, end: datetime) -> list[str]:
    local = ZoneInfo(zone_name)
    trigger = Trigger.cron(expression, zone_name)
    out, fired = [], trigger.next_after(None, start)
    while fired is not None and fired <= end:
        out.append(fired.astimezone(local).strftime("%a %m-%d %H:%M%z"))
        fired = trigger.next_after(fired, fired)
    return out


def test_numeric_weekdays_count_from_sunday() -> None:
    week = (datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC))
    assert local_fires("0 8 * * 1-5", "Europe/Berlin", *week) == [
        "Mon 11-30 08:00+0100", "Tue 12-01 08:00+0100", "Wed 12-02 08:00+0100", "Thu 12-03 08:00+0100",
        "Fri 12-04 08:00+0100",
    ]  # fmt: skip
    sundays = local_fires("0 3 * * 0", "UTC", *YEARS_2026_2027)
    assert len(sundays) == 104 and {f[:3] for f in sundays} == {"Sun"}
    assert local_fires("0 3 * * 7", "UTC", *YEARS_2026_2027) == sundays, "7 is Sunday too"
    assert local_fires("0 3 * * SUN", "UTC", *YEARS_2026_2027) == sundays, "names in any case"
    assert {f[:3] for f in local_fires("0 22 * * 5-7", "UTC", *YEARS_2026_2027)} == {"Fri", "Sat", "Sun"}


@pytest.mark.parametrize(
    ("zone_name", "night"),
    [("Europe/Berlin", "03-29"), ("America/New_York", "03-08"), ("Australia/Lord_Howe", "10-04")],
)
@pytest.mark.parametrize("minute", [0, 30])
def test_a_midnight_job_keeps_the_day_after_the_clocks_go_forward(zone_name: str, night: str, minute: int) -> None:
    local = ZoneInfo(zone_name)
    month, day = (int(x) for x in night.split("-"))
    start = datetime(2026, month, day - 1, 12, tzinfo=local)
    got = local_fires(f"{minute} 0 * * *", zone_name, start, start + timedelta(days=3, hours=-1))
    assert [f[4:15] for f in got] == [
        f"{(start + timedelta(days=n)).strftime('%m-%d')} 00:{minute:02d}" for n in (1, 2, 3)
    ], "every day at its local time, the one after the change included"


def test_a_skipped_midnight_fires_once_when_the_gap_ends() -> None:
    # America/Santiago: 2026-09-06 00:00 does not exist (the clocks go from 00:00 to 01:00).
    got = local_fires(
        "0 0 * * *", "America/Santiago", datetime(2026, 9, 5, tzinfo=UTC), datetime(2026, 9, 8, 6, tzinfo=UTC)
    )
    assert got == ["Sat 09-05 00:00-0400", "Sun 09-06 01:00-0300", "Mon 09-07 00:00-0300", "Tue 09-08 00:00-0300"]


def test_a_skipped_time_fires_at_the_first_instant_after_the_gap() -> None:
    night = (datetime(2026, 3, 29, tzinfo=UTC), datetime(2026, 3, 29, 12, tzinfo=UTC))
    assert local_fires("30 2 * * *", "Europe/Berlin", *night) == ["Sun 03-29 03:00+0200"]
    several = local_fires(
        "*/15 2 * * *", "Europe/Berlin", datetime(2026, 3, 29, tzinfo=UTC), datetime(2026, 3, 29, 12, tzinfo=UTC)
    )
    assert several == ["Sun 03-29 03:00+0200"], "four skipped times of one night: one fire"
    once = Trigger.once("2026-03-29T02:30", "Europe/Berlin")
    assert datetime.fromisoformat(once.spec) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC), "03:00 CEST, as cron"


def test_lord_howe_half_hour_shift_hourly_job() -> None:
    got = local_fires(
        "0 * * * *", "Australia/Lord_Howe", datetime(2026, 10, 3, 13, tzinfo=UTC), datetime(2026, 10, 3, 17, tzinfo=UTC)
    )
    assert got == ["Sun 10-04 00:00+1030", "Sun 10-04 01:00+1030", "Sun 10-04 02:30+1100", "Sun 10-04 03:00+1100",
                   "Sun 10-04 04:00+1100"], "02:00 is skipped: it fires at 02:30, when the gap ends"  # fmt: skip
    back = local_fires(
        "30 * * * *", "Australia/Lord_Howe", datetime(2026, 4, 4, 13, tzinfo=UTC), datetime(2026, 4, 4, 16, tzinfo=UTC)
    )
    assert back == ["Sun 04-05 00:30+1100", "Sun 04-05 01:30+1100", "Sun 04-05 01:30+1030", "Sun 04-05 02:30+1030"]


@pytest.mark.parametrize("expression", ["0 * * * *", "0 0-23 * * *", "0 */1 * * *", "@hourly", "0 0-11,12-23 * * *"])
def test_every_hour_is_decided_by_the_hours_not_the_text(expression: str) -> None:
    got = local_fires(
        expression, "Europe/Berlin", datetime(2026, 10, 24, 23, tzinfo=UTC), datetime(2026, 10, 25, 2, tzinfo=UTC)
    )
    assert got == ["Sun 10-25 01:00+0200", "Sun 10-25 02:00+0200", "Sun 10-25 02:00+0100", "Sun 10-25 03:00+0100"]


def test_a_job_at_fixed_hours_fires_a_repeated_hour_once() -> None:
    got = local_fires(
        "0 1-3 * * *", "Europe/Berlin", datetime(2026, 10, 24, 22, tzinfo=UTC), datetime(2026, 10, 25, 3, tzinfo=UTC)
    )
    assert got == ["Sun 10-25 01:00+0200", "Sun 10-25 02:00+0200", "Sun 10-25 03:00+0100"]


def test_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    got = local_fires("0 9 1 * mon", "UTC", datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 12, 15, tzinfo=UTC))
    assert got == ["Mon 11-30 09:00+0000", "Tue 12-01 09:00+0000", "Mon 12-07 09:00+0000", "Mon 12-14 09:00+0000"]
    # A day field that starts with '*' leaves the other to decide alone (cron's rule): odd days that are Mondays.
    odd_mondays = local_fires(
        "0 0 */2 * mon", "UTC", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    )
    assert [f[4:9] for f in odd_mondays] == ["01-05", "01-19", "02-09", "02-23"]


def test_macros_ranges_and_steps_as_cron_reads_them() -> None:
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    assert len(local_fires("@daily", "UTC", start, end)) == 365
    assert len(local_fires("@midnight", "UTC", start, end)) == 365
    assert len(local_fires("@hourly", "UTC", start, end)) == 365 * 24
    assert {f[:3] for f in local_fires("@weekly", "UTC", start, end)} == {"Sun"}
    assert [f[4:] for f in local_fires("@monthly", "UTC", start, end)][:2] == ["01-01 00:00+0000", "02-01 00:00+0000"]
    assert (
        local_fires("@yearly", "UTC", start, end)
        == local_fires("@annually", "UTC", start, end)
        == ["Thu 01-01 00:00+0000"]
    )
    day = (datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 1, 23, 59, tzinfo=UTC))
    assert [f[10:15] for f in local_fires("0 3-3/2 * * *", "UTC", *day)] == ["03:00"], "a one-value range stays one"
    assert [f[10:15] for f in local_fires("5-5 7 * * *", "UTC", *day)] == ["07:05"]
    assert [f[10:15] for f in local_fires("0 20/2 * * *", "UTC", *day)] == ["20:00", "22:00"], "a/n runs to the end"
    assert {f[:3] for f in local_fires("0 0 * * 1/2", "UTC", start, end)} == {"Mon", "Wed", "Fri", "Sun"}, "…7 too"


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 8 * * 1-5", "at 08:00 on Monday to Friday, Europe/Berlin (cron '0 8 * * 1-5')"),
        ("30 18 * * 0", "at 18:30 on Sunday, Europe/Berlin (cron '30 18 * * 0')"),
        ("0 9 1 * mon", "at 09:00 on day 1 of the month and every Monday, Europe/Berlin (cron '0 9 1 * mon')"),
        ("*/15 9-17 * * 1-5", "every 15 minutes during the hours 09 to 17 on Monday to Friday, Europe/Berlin"),
        ("@daily", "at 00:00 every day, Europe/Berlin (cron '@daily')"),
        ("0 0 1 1 *", "at 00:00 on 1 January, Europe/Berlin"),
        ("0 */2 * * *", "every 2 hours from 00:00, Europe/Berlin"),
        ("0 12 * 3-5,9 *", "at 12:00 every day in March to May and September, Europe/Berlin"),
    ],
)
def test_the_meaning_in_words(expression: str, words: str) -> None:
    assert Trigger.cron(expression, "Europe/Berlin").describe().startswith(words)


def test_a_stored_expression_that_cannot_be_read_any_more_loads() -> None:
    stored = Trigger.from_json({"kind": "cron", "spec": "0 8 last * *", "timezone": "Europe/Berlin"})  # APScheduler's
    assert stored.problem is not None and "cannot read the cron expression '0 8 last * *'" in stored.problem
    assert stored.describe().startswith("cron '0 8 last * *' (Europe/Berlin), which can no longer be read")
    now = datetime(2026, 11, 26, tzinfo=UTC)
    assert stored.next_after(None, now) is None and stored.last_until(now) is None and stored.count(now, now) == 0


def test_last_fire_and_count_after_years_away() -> None:
    trigger = Trigger.cron("0 8 * * *", "Europe/Berlin")
    due, now = datetime(2026, 11, 27, 7, 0, tzinfo=UTC), datetime(2035, 2, 12, 12, 0, tzinfo=UTC)
    assert trigger.last_until(now) == datetime(2035, 2, 12, 7, 0, tzinfo=UTC)
    assert trigger.count(due, now) == (datetime(2035, 2, 12) - datetime(2026, 11, 27)).days + 1
    every5 = Trigger.cron("*/5 * * * *", "Europe/Berlin")
    assert every5.count(due, due + timedelta(days=365)) == 365 * 288 + 1, "both ends counted, DST changes included"
