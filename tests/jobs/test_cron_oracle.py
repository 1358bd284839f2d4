"""The held-out oracle: every fire of many expressions in six zones over 2026-2027, as the job service finds them
(one ``next_after`` from the last), against the independent reference in ``cron_reference`` (cronsim's
crontab reading, the zone's offsets seen from UTC, the rules of docs/jobs.md). 0 disagreements; the counts and the last
fire before a moment (the missed-fire notice) agree with the list too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.jobs.triggers import Trigger
from tests.jobs.cron_reference import reference_fires

ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "UTC")
EXPRESSIONS = (
    "0 8 * * 1-5",
    "0 8 * * mon-fri",
    "0 3 * * 0",
    "0 3 * * 7",
    "0 22 * * 5-7",
    "0 0 * * *",
    "30 0 * * *",
    "0 2 * * *",
    "30 2 * * *",
    "59 1 * * sun-tue",
    "45 23 * * 6",
    "0 * * * *",
    "0 0-23 * * *",
    "*/30 0-3 * * *",
    "15,45 1-2 * * *",
    "0 */5 * * *",
    "0 9 1 * mon",
    "0 12 1,15 * *",
    "0 0 */2 * mon",
    "0 1 * 3,4,9,10 0",
    "0 0 31 * *",
    "0 0 29 2 *",
    "@hourly",
    "@daily",
    "@weekly",
    "@monthly",
    "@yearly",
)
START, END = datetime(2026, 1, 1, tzinfo=UTC), datetime(2028, 1, 1, tzinfo=UTC)


def walk(trigger: Trigger, start: datetime, end: datetime) -> list[datetime]:
    """Fires as the service meets them: each the first after the one before."""
    fires: list[datetime] = []
    fired = trigger.next_after(None, start + timedelta(microseconds=1))
    while fired is not None and fired <= end:
        fires.append(fired)
        fired = trigger.next_after(fired, fired)
    return fires


@pytest.mark.xdist_group("cron-oracle")
@pytest.mark.parametrize("zone", ZONES)
def test_every_fire_agrees_with_the_reference(zone: str) -> None:
    compared = disagreements = 0
    for expression in EXPRESSIONS:
        trigger = Trigger.cron(expression, zone)
        ours = walk(trigger, START, END)
        reference = reference_fires(expression, zone, START, END)
        differing = sorted(set(ours) ^ set(reference))
        assert differing == [], f"{expression!r} in {zone}: {differing[:5]}"
        assert trigger.count(START + timedelta(microseconds=1), END) == len(reference), expression
        if len(reference) >= 2:  # (29 February has no fire in 2026-2027: none found is agreement too)
            middle = reference[len(reference) // 2]
            assert trigger.last_until(middle) == middle
            assert trigger.last_until(middle - timedelta(microseconds=1)) == reference[len(reference) // 2 - 1]
        compared += len(reference)
        disagreements += len(differing)
    print(f"{zone}: {len(EXPRESSIONS)} expressions, {compared} fires compared, {disagreements} disagreements")
    assert compared > 0 and disagreements == 0
