"""A cron expression's fires in a time zone: the local days and times it names, turned into instants.

The rules (docs/jobs.md states them; they hold for every zone in tzdata, 30-minute shifts included):

- a local time that exists once fires at that local time (midnight after the clocks go forward included);
- a local time the clocks skip fires once, at the first instant after the gap (02:30 on the night Berlin goes
  from 02:00 to 03:00 fires at 03:00; several skipped times of one night fire once, together);
- a local time the clocks pass twice fires once, the first time, unless the job's meaning is "every hour" (its
  hours are all 24, however written: ``*``, ``*/1``, ``0-23``): then every real hour fires, both passes;
- two fires at the same instant are one fire.

How: a day on which the zone's offset does not change (almost all of them) is one offset for all its times, so
the times are found by bisection; a day with a change resolves each time on its own (``fold`` tells a
repeated time's two passes apart; a skipped time maps to the end of the gap, found by bisection). tzdata never
changes a zone's offset twice within 48 hours, which is what lets one offset check per day decide it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from bot.jobs.cron import CronExpression

DAY = timedelta(days=1)
MINUTE = timedelta(minutes=1)
HORIZON_YEARS = 50
"""How far a search for the next (or last) fire looks before it gives up (29 February on a weekday recurs
within 40 years)."""


def local_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant (UTC) a naive local ``wall`` time first happens in ``zone``: the first pass of a repeated time,
    the end of the gap for a skipped one."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first <= second:
        return first
    return _gap_end(zone, second, first)


def _gap_end(zone: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """The instant the offset changes, between ``before`` (old offset) and ``after`` (new offset)."""
    old = before.astimezone(zone).utcoffset()
    low, high = int(before.timestamp()), int(after.timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == old:
            low = middle
        else:
            high = middle
    return datetime.fromtimestamp(high, UTC)


class ZonedCron:
    """The fires of ``cron`` in ``zone``, as UTC instants."""

    def __init__(self, cron: CronExpression, zone: ZoneInfo) -> None:
        self.cron = cron
        self.zone = zone
        self._listed = lru_cache(maxsize=64)(self._resolve_day)
        self._plain_start = lru_cache(maxsize=256)(self._day_start)

    # -- questions ---------------------------------------------------------------------------------

    def next_after(self, moment: datetime) -> datetime | None:
        """The first fire strictly after ``moment``; None: none within the horizon."""
        found: datetime | None = None
        for day in self._days(moment, forward=True):
            fire = self._first_after(day, moment)
            if fire is not None:
                found = fire if found is None else min(found, fire)
            if found is not None and day > self._local_date(found):
                return found  # the day after the one found is checked too: a repeated hour can cross midnight
        return found

    def last_until(self, moment: datetime) -> datetime | None:
        """The last fire at or before ``moment``; None: none within the horizon."""
        found: datetime | None = None
        for day in self._days(moment, forward=False):
            fire = self._last_until(day, moment)
            if fire is not None:
                found = fire if found is None else max(found, fire)
            if found is not None and day < self._local_date(found):
                return found
        return found

    def count(self, start: datetime, end: datetime) -> int:
        """How many fires there are from ``start`` to ``end``, both included (a day's work per day, not per fire)."""
        if end < start:
            return 0
        listed: set[datetime] = set()
        total = 0
        day = self._local_date(start) - DAY
        last = self._local_date(end) + DAY
        while day <= last:
            if self.cron.on(day):
                begin = self._plain_start(day)
                if begin is None:
                    listed.update(f for f in self._listed(day) if start <= f <= end)
                elif self._plain_start(day - DAY) is None or self._plain_start(day + DAY) is None:
                    # Next to a change: a gap that ends at midnight sends the day before's skipped times to this
                    # day's first instant, so this day's fires join the set that merges them.
                    listed.update(f for m in self.cron.times if start <= (f := begin + m * MINUTE) <= end)
                else:
                    low = _minutes_up(start - begin)
                    high = _minutes_down(end - begin)
                    total += max(0, bisect_right(self.cron.times, high) - bisect_left(self.cron.times, low))
            day += DAY
        return total + len(listed)

    def between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Every fire from ``start`` (excluded) to ``end`` (included), in order."""
        fire = self.next_after(start)
        while fire is not None and fire <= end:
            yield fire
            fire = self.next_after(fire)

    # -- one day -----------------------------------------------------------------------------------

    def _first_after(self, day: date, moment: datetime) -> datetime | None:
        begin = self._plain_start(day)
        if begin is None:
            fires = self._listed(day)
            index = bisect_right(fires, moment)
            return fires[index] if index < len(fires) else None
        index = bisect_right(self.cron.times, _minutes_down(moment - begin))
        return begin + self.cron.times[index] * MINUTE if index < len(self.cron.times) else None

    def _last_until(self, day: date, moment: datetime) -> datetime | None:
        begin = self._plain_start(day)
        if begin is None:
            fires = self._listed(day)
            index = bisect_right(fires, moment)
            return fires[index - 1] if index else None
        index = bisect_right(self.cron.times, _minutes_down(moment - begin))
        return begin + self.cron.times[index - 1] * MINUTE if index else None

    def _day_start(self, day: date) -> datetime | None:
        """The instant ``day`` starts when the zone's offset is the same all day long; None when it changes."""
        midnight = datetime.combine(day, time(), self.zone)
        begin = midnight.astimezone(UTC)
        local = begin.astimezone(self.zone)
        if local.replace(tzinfo=None) != midnight.replace(tzinfo=None):
            return None  # midnight itself was skipped
        if (begin + DAY).astimezone(self.zone).utcoffset() != local.utcoffset():
            return None
        return begin

    def _resolve_day(self, day: date) -> list[datetime]:
        """Every fire of ``day`` on a day the offset changes, each time resolved by the rules, in order."""
        fires: set[datetime] = set()
        for minute in self.cron.times:
            wall = datetime.combine(day, time(minute // 60, minute % 60))
            first = wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
            second = wall.replace(tzinfo=self.zone, fold=1).astimezone(UTC)
            if first == second or first < second:
                fires.add(first)  # once, or the first pass of a repeated time
                if first < second and self.cron.every_hour:
                    fires.add(second)
            else:  # skipped: fold 0 reads it with the offset before the gap, which lands after it
                fires.add(_gap_end(self.zone, second, first))
        return sorted(fires)

    # -- walking days ------------------------------------------------------------------------------

    def _local_date(self, moment: datetime) -> date:
        return moment.astimezone(self.zone).date()

    def _days(self, moment: datetime, *, forward: bool) -> Iterator[date]:
        """The days the expression fires on, from the day before ``moment``'s (forward) or the day after it
        (backward), month by month past the months it skips, up to the horizon."""
        day = self._local_date(moment) + (-DAY if forward else DAY)
        limit = day.replace(year=day.year + (HORIZON_YEARS if forward else -HORIZON_YEARS), day=1)
        months = self.cron.months
        while (day <= limit) if forward else (day >= limit):
            if day.month not in months:
                if forward:
                    day = date(day.year + (day.month == 12), day.month % 12 + 1, 1)
                else:
                    day = day.replace(day=1) - DAY
                continue
            if self.cron.on(day):
                yield day
            day += DAY if forward else -DAY


def _minutes_down(span: timedelta) -> int:
    """Whole minutes in ``span``, rounded down (towards the past)."""
    return span // MINUTE


def _minutes_up(span: timedelta) -> int:
    return -((-span) // MINUTE)
