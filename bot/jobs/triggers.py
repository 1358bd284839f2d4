"""When a recurring job fires: a cron expression, a fixed interval, or one time, in a time zone.

Cron expressions are read as cron reads them (:mod:`bot.jobs.cron`: weekdays from Sunday = 0 or 7, names,
ranges, steps, day-of-month or day-of-week when both are restricted, ``@daily``-style macros) and evaluated in
the job's time zone by the rules of :mod:`bot.jobs.schedule`: "every day at 08:00" stays at 08:00 local across
daylight-saving changes, a local time the clocks skip fires once at the first instant after the gap, and one
they pass twice fires once (both times when the job runs every hour).

Intervals are absolute (every 3,600 s is every hour of real time, DST or not), anchored at the job's start.
All times handed in and out are aware datetimes; the store keeps them as naive UTC.

Jobs stored before these rules (APScheduler read weekday numbers from Monday = 0, and required both day fields)
load as they are: the expression now means what crontab means; one that can no longer be read reports why
(:attr:`Trigger.problem`) and fires nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.jobs.cron import CronError, parse
from bot.jobs.schedule import ZonedCron, local_instant
from bot.jobs.wording import describe

Kind = Literal["cron", "interval", "once"]
SAMPLE_FIRES = 50
"""Fires of a cron expression looked at to find its shortest gap (the minimum-interval limit)."""
JUST_BEFORE = timedelta(microseconds=1)


class TriggerError(ValueError):
    """A trigger that cannot be used; the message says why, for a person or a model to fix."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TriggerError(f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC") from None


@lru_cache(maxsize=1024)
def _schedule(spec: str, timezone: str) -> ZonedCron:
    try:
        return ZonedCron(parse(spec), zone(timezone))
    except CronError as exc:
        raise TriggerError(f"cannot read the cron expression {spec!r}: {exc}") from None


@dataclass(frozen=True)
class Trigger:
    kind: Kind
    spec: str
    """The cron expression, the interval in seconds, or the ISO time."""
    timezone: str
    anchor: datetime | None = None
    """Intervals: the first fire (aware); the others follow every ``spec`` seconds."""

    @classmethod
    def cron(cls, expression: str, timezone: str) -> Trigger:
        trigger = cls("cron", " ".join(expression.split()), timezone)
        _schedule(trigger.spec, timezone)  # validates
        return trigger

    @classmethod
    def every(cls, seconds: float, timezone: str, start: datetime) -> Trigger:
        if not math.isfinite(seconds) or seconds <= 0:
            raise TriggerError("an interval is a positive number of seconds")
        zone(timezone)
        return cls("interval", f"{seconds:g}", timezone, start.astimezone(UTC))

    @classmethod
    def once(cls, at: str, timezone: str) -> Trigger:
        """``at``: ISO 8601; without an offset it is local time in ``timezone`` (a time the clocks skip that
        night is the first instant after the gap, one they pass twice the first pass)."""
        try:
            when = datetime.fromisoformat(at.strip().replace("Z", "+00:00"))
        except ValueError:
            raise TriggerError(f"cannot read the time {at!r}; use ISO 8601 like 2026-05-01T17:00") from None
        moment = local_instant(when, zone(timezone)) if when.tzinfo is None else when.astimezone(UTC)
        return cls("once", moment.isoformat(), timezone)

    @property
    def problem(self) -> str | None:
        """Why a stored cron expression cannot be read any more (None: it can, or this is not cron)."""
        if self.kind != "cron":
            return None
        try:
            _schedule(self.spec, self.timezone)
        except TriggerError as exc:
            return str(exc)
        return None

    def _cron(self) -> ZonedCron | None:
        return None if self.problem else _schedule(self.spec, self.timezone)

    # -- firing --------------------------------------------------------------------------------

    def next_after(self, fired: datetime | None, now: datetime) -> datetime | None:
        """The first fire after ``fired`` (None: the job never fired) and not before ``now``; None: no more."""
        if self.kind == "once":
            at = datetime.fromisoformat(self.spec)
            return at if fired is None and at >= now - timedelta(seconds=1) else None
        if self.kind == "interval":
            assert self.anchor is not None
            period = float(self.spec)
            since = max(now, fired + timedelta(seconds=period) if fired else now)
            if since <= self.anchor:
                return self.anchor
            steps = math.ceil((since - self.anchor).total_seconds() / period - 1e-9)
            return self.anchor + timedelta(seconds=steps * period)
        schedule = self._cron()
        if schedule is None:
            return None
        after = now.astimezone(UTC) - JUST_BEFORE
        if fired is not None:
            after = max(after, fired.astimezone(UTC))
        return schedule.next_after(after)

    def last_until(self, moment: datetime) -> datetime | None:
        """The last fire at or before ``moment`` (None: none)."""
        if self.kind == "once":
            at = datetime.fromisoformat(self.spec)
            return at if at <= moment else None
        if self.kind == "interval":
            assert self.anchor is not None
            if moment < self.anchor:
                return None
            period = float(self.spec)
            steps = math.floor((moment - self.anchor).total_seconds() / period + 1e-9)
            return self.anchor + timedelta(seconds=steps * period)
        schedule = self._cron()
        return None if schedule is None else schedule.last_until(moment.astimezone(UTC))

    def count(self, start: datetime, end: datetime) -> int:
        """How many fires there are from ``start`` to ``end``, both included."""
        if end < start:
            return 0
        if self.kind == "once":
            return int(start <= datetime.fromisoformat(self.spec) <= end)
        if self.kind == "interval":
            first, last = self.next_after(None, start), self.last_until(end)
            if first is None or last is None or last < first:
                return 0
            return round((last - first).total_seconds() / float(self.spec)) + 1
        schedule = self._cron()
        return 0 if schedule is None else schedule.count(start.astimezone(UTC), end.astimezone(UTC))

    def upcoming(self, now: datetime, count: int) -> list[datetime]:
        """The next ``count`` fires from ``now`` on (fewer when the trigger ends)."""
        fires: list[datetime] = []
        fired: datetime | None = None
        while len(fires) < count:
            fired = self.next_after(fired, now if fired is None else fired)
            if fired is None:
                break
            fires.append(fired)
        return fires

    def shortest_gap(self, now: datetime) -> float | None:
        """The shortest time between two fires, in seconds (None: it fires once)."""
        if self.kind == "once":
            return None
        if self.kind == "interval":
            return float(self.spec)
        fires = self.upcoming(now, SAMPLE_FIRES)
        gaps = [(b - a).total_seconds() for a, b in zip(fires, fires[1:], strict=False)]
        return min(gaps) if gaps else None

    def describe(self) -> str:
        """What the trigger means, in words, with its expression: "at 08:00 on Monday to Friday, Europe/Berlin
        (cron '0 8 * * 1-5')"."""
        if self.kind == "cron":
            problem = self.problem
            if problem is not None:
                return f"cron '{self.spec}' ({self.timezone}), which can no longer be read: {problem}"
            return f"{describe(_schedule(self.spec, self.timezone).cron)}, {self.timezone} (cron '{self.spec}')"
        if self.kind == "interval":
            return f"every {_span(float(self.spec))}"
        at = datetime.fromisoformat(self.spec).astimezone(zone(self.timezone))
        return f"once at {at:%Y-%m-%d %H:%M} ({self.timezone})"

    # -- storage ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "spec": self.spec, "timezone": self.timezone}
        if self.anchor is not None:
            out["anchor"] = self.anchor.isoformat()
        return out

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Trigger:
        """A stored trigger as it is (not validated: a job whose expression cannot be read any more still loads,
        and :attr:`problem` says why)."""
        anchor = datetime.fromisoformat(data["anchor"]) if data.get("anchor") else None
        kind: Kind = data["kind"]  # type: ignore[assignment]
        return cls(kind, data["spec"], data["timezone"], anchor)


def _span(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} s"
