"""Property tests of the cron evaluator against the libraries as oracles.

- Crontab reading: random expressions (numbers, names, ranges, steps, lists, 7 = Sunday, both day fields) in UTC
  against cronsim, and against croniter where croniter reads crontab as cron does (it ORs the day fields when one
  is a stepped ``*/n``, and ends ``a/n`` weekdays at Saturday; cron does neither). One-value ranges (``5-5``) are
  not drawn: both libraries misread them, so explicit cases in test_triggers pin cron's reading.
- Clock changes: every tzdata zone whose offset changes in 2026-2028, around every change, and random expressions
  in random such zones, against the reference (cronsim's wall times, the rules of docs/jobs.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

import pytest
from croniter import croniter
from cronsim import CronSim, CronSimError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.jobs.cron import CronError, parse
from bot.jobs.triggers import Trigger
from tests.jobs.cron_reference import five_fields, reference_fires, transitions

YEARS = (2026, 2028)
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@cache
def changing_zones() -> tuple[str, ...]:
    """Zones whose offset is not the same on the first of every month of 2026-2028 (DST, or a change of
    standard time)."""
    firsts = [datetime(y, m, 1, tzinfo=UTC) for y in range(YEARS[0], YEARS[1] + 1) for m in range(1, 13)]
    found = []
    for name in sorted(available_timezones()):
        zone = ZoneInfo(name)
        if len({moment.astimezone(zone).utcoffset() for moment in firsts}) > 1:
            found.append(name)
    return tuple(found)


@st.composite
def field(draw: st.DrawFn, low: int, high: int, names: tuple[str, ...] = (), first_name: int = 0) -> str:
    def value() -> str:
        if names and draw(st.booleans()):
            name = draw(st.sampled_from(names))
            return name.upper() if draw(st.booleans()) else name
        return str(draw(st.integers(low, high)))

    def number(text: str) -> int:
        return names.index(text.lower()) + first_name if text.lower() in names else int(text)

    def item() -> str:
        kind = draw(st.sampled_from(("star", "one", "range", "star-step", "range-step", "from-step")))
        if kind == "star":
            return "*"
        if kind == "star-step":
            return f"*/{draw(st.integers(1, high - low + 1))}"
        first = value()
        if kind == "one":
            return first
        if kind == "from-step":
            return f"{number(first)}/{draw(st.integers(1, high - low + 1))}"
        last = value()
        if number(first) == number(last):
            return first  # (``5-5``: cronsim reads ``5-5/2`` as ``5/2``, croniter ``5-5`` as ``*``; see test_triggers)
        if number(first) > number(last):
            first, last = last, first
        step = f"/{draw(st.integers(1, high - low + 1))}" if kind == "range-step" else ""
        return f"{first}-{last}{step}"

    if draw(st.integers(0, 2)) == 0:
        return "*"
    return ",".join(item() for _ in range(draw(st.integers(1, 3))))


@st.composite
def expressions(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually")))
    return " ".join(
        (
            draw(field(0, 59)),
            draw(field(0, 23)),
            draw(field(1, 31)),
            draw(field(1, 12, MONTHS, 1)),
            draw(field(0, 7, DAYS, 0)),
        )
    )


def _readable(expression: str) -> bool:
    """Whether cronsim reads it; ours must agree (both refuse days no allowed month has)."""
    try:
        CronSim(five_fields(expression), datetime(2026, 1, 1))
    except CronSimError:
        with pytest.raises(CronError):
            parse(expression)
        return False
    parse(expression)
    return True


@PROPERTY
@given(expression=expressions(), start=st.datetimes(datetime(2026, 1, 1), datetime(2027, 12, 1)))
def test_crontab_reading_agrees_with_cronsim_and_croniter(expression: str, start: datetime) -> None:
    if not _readable(expression):
        return
    start = start.replace(tzinfo=UTC)
    trigger = Trigger.cron(expression, "UTC")
    ours = trigger.upcoming(start + timedelta(microseconds=1), 40)
    library = CronSim(five_fields(expression), start)
    assert ours == [next(library) for _ in ours], expression
    days, weekdays = five_fields(expression).split()[2], five_fields(expression).split()[4]
    if "/" not in days + weekdays:
        cron = croniter(expression, start)
        assert ours == [cron.get_next(datetime) for _ in ours], expression


@PROPERTY
@given(
    expression=expressions(),
    zone=st.sampled_from(changing_zones()),
    which=st.integers(0, 20),
    later=st.integers(0, 4 * 24 * 60),
)
def test_random_expressions_across_clock_changes_agree_with_the_reference(
    expression: str, zone: str, which: int, later: int
) -> None:
    if not _readable(expression):
        return
    changes = transitions(zone, *YEARS)
    change = changes[which % len(changes)]
    start, end = change - timedelta(days=2), change + timedelta(days=2)
    trigger = Trigger.cron(expression, zone)
    reference = reference_fires(expression, zone, start, end)
    assert trigger.upcoming(start + timedelta(microseconds=1), len(reference) + 1)[: len(reference)] == reference
    moment = start + timedelta(minutes=later)
    before = [f for f in reference if f <= moment]
    if before:
        assert trigger.last_until(moment) == before[-1]
    assert trigger.count(start + timedelta(microseconds=1), moment) == len(before)


SWEEP = ("0 0 * * *", "30 2 * * *", "0 * * * *", "*/30 1-3 * * *", "15 0-23 * * 1-5", "0 1 * * 0")


@pytest.mark.xdist_group("cron-oracle")
def test_every_zone_that_changes_its_clocks_around_every_change() -> None:
    """Every tzdata zone whose offset changes in 2026-2028, two days either side of each change, a handful of
    expressions: the fires and their count agree with the reference."""
    zones = changing_zones()
    assert {"Europe/Berlin", "Australia/Lord_Howe", "America/Santiago", "Antarctica/Troll"} <= set(zones)
    compared = windows = 0
    for zone in zones:
        for change in transitions(zone, *YEARS):
            start, end = change - timedelta(days=1), change + timedelta(days=1)
            windows += 1
            for expression in SWEEP:
                trigger = Trigger.cron(expression, zone)
                reference = reference_fires(expression, zone, start, end)
                ours = trigger.upcoming(start + timedelta(microseconds=1), len(reference) + 1)
                assert ours[: len(reference)] == reference, f"{expression!r} in {zone} around {change}"
                assert len(ours) == len(reference) + 1 and ours[-1] > end
                assert trigger.count(start + timedelta(microseconds=1), end) == len(reference)
                compared += len(reference)
    print(f"{len(zones)} zones, {windows} clock changes, {len(SWEEP)} expressions: {compared} fires, 0 disagreements")
