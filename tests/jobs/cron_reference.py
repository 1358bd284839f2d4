"""An independent reference for when a cron job fires in a time zone, for the oracle tests.

It shares nothing with ``bot.jobs`` but the rules written in docs/jobs.md:

- which local wall times match an expression is cronsim's answer (Debian cron semantics), asked on naive
  datetimes, where no clock ever changes; the macros are spelled out here from the crontab(5) manual page;
- which instants those wall times are comes from the zone's offsets seen from the UTC side: the UTC timeline
  is cut into spans of one offset (found by sampling every 6 hours, then bisecting to the second), each span
  shows a range of wall times, and a wall time shown by one span fires there, by two spans (the clocks went
  back) fires in the first (in both when the expression's hour set, as cronsim expands it, is all 24 hours),
  by none (the clocks went forward) fires at the start of the span after the gap;
- fires at the same instant count once.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from cronsim import CronSim

CRONTAB_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
SAMPLE = timedelta(hours=6)
YEARS = (2026, 2028)
"""The years the tests look at: one table of spans per zone serves every window in them (``reference_fires``)."""
PADDING = timedelta(days=1)
"""How far before and after the window the walls are walked: more than any offset (UTC-12 to UTC+14), so every
wall that is an instant of the window is seen."""


@dataclass(frozen=True)
class Span:
    start: datetime
    """UTC; the span lasts until the next one starts."""
    offset: timedelta


def five_fields(expression: str) -> str:
    return CRONTAB_MACROS.get(expression.strip().lower(), expression)


def offset_at(zone: ZoneInfo, moment: datetime) -> timedelta:
    """The zone's UTC offset at the UTC instant ``moment``."""
    offset = moment.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


@cache
def spans(zone_name: str, first_year: int, last_year: int) -> tuple[Span, ...]:
    """The zone's spans of one offset covering ``first_year`` - 1 to ``last_year`` + 1 (UTC)."""
    zone = ZoneInfo(zone_name)
    moment = datetime(first_year - 1, 1, 1, tzinfo=UTC)
    end = datetime(last_year + 2, 1, 1, tzinfo=UTC)
    found = [Span(moment, offset_at(zone, moment))]
    while moment < end:
        following = moment + SAMPLE
        offset = offset_at(zone, following)
        if offset != found[-1].offset:
            low, high = int(moment.timestamp()), int(following.timestamp())
            while high - low > 1:
                middle = (low + high) // 2
                if offset_at(zone, datetime.fromtimestamp(middle, UTC)) == found[-1].offset:
                    low = middle
                else:
                    high = middle
            found.append(Span(datetime.fromtimestamp(high, UTC), offset))
        moment = following
    return tuple(found)


def transitions(zone_name: str, first_year: int, last_year: int) -> list[datetime]:
    """The instants the zone's offset changes within the years (UTC)."""
    return [s.start for s in spans(zone_name, first_year, last_year)[1:] if first_year <= s.start.year <= last_year]


def reference_fires(expression: str, zone_name: str, start: datetime, end: datetime) -> list[datetime]:
    """Every fire of ``expression`` in the zone after ``start`` up to ``end`` (UTC instants, in order)."""
    table = spans(zone_name, min(start.year, YEARS[0]), max(end.year, YEARS[1]))
    assert table[0].start < start - timedelta(days=3), "the spans cover the walls looked at"
    starts = [s.start for s in table]
    local_starts = [s.start + s.offset for s in table]
    local_ends = [*(table[i + 1].start + s.offset for i, s in enumerate(table[:-1])), datetime.max.replace(tzinfo=UTC)]
    fields = five_fields(expression)
    every_hour = CronSim(fields, datetime(2000, 1, 1)).hours == set(range(24))
    naive_from = (start - PADDING).replace(tzinfo=None)
    naive_to = (end + PADDING).replace(tzinfo=None)
    fires: set[datetime] = set()
    for wall in CronSim(fields, naive_from - timedelta(minutes=1)):
        if wall > naive_to:
            break
        aware = wall.replace(tzinfo=UTC)  # the wall reading, compared with spans' readings (not an instant)
        index = bisect_right(local_starts, aware) - 1
        shown = [i for i in (index - 1, index) if i >= 0 and local_starts[i] <= aware < local_ends[i]]
        if not shown:  # in a gap: the span after it starts when the gap ends
            instants = [starts[index + 1]]
        elif every_hour:
            instants = [aware - table[i].offset for i in shown]
        else:
            instants = [aware - table[shown[0]].offset]
        fires.update(t for t in instants if start < t <= end)
    return sorted(fires)
