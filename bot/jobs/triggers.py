"""When a recurring job fires: a cron expression, a fixed interval, or one time, in a time zone.

Cron expressions are APScheduler's (``CronTrigger.from_crontab``: minute hour day month day-of-week, names
allowed: ``0 8 * * mon-fri``), evaluated in the job's time zone, so "every day at 08:00" stays at 08:00 local
across daylight-saving changes. Two DST edges are decided here:

- a local time that does not exist (02:30 on the night clocks go forward) fires once, at the same instant
  an hour-less clock would reach it (APScheduler's answer: 01:30 UTC for Europe/Berlin, 03:30 local);
- a local time that happens twice (02:30 on the night clocks go back) fires once, the first time: a fire
  whose local wall time equals the previous fire's is skipped, unless the expression runs every hour (then
  every real hour fires, 02:00 twice).

Intervals are absolute (every 3,600 s is every hour of real time, DST or not), anchored at the job's start.
All times handed in and out are aware datetimes; the store keeps them as naive UTC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

Kind = Literal["cron", "interval", "once"]
FOLD_PROBES = 8
"""Half-hour steps tried past a time APScheduler answers twice (the night the clocks go back)."""
SAMPLE_FIRES = 50
"""Fires of a cron expression looked at to find its shortest gap (the minimum-interval limit)."""


class TriggerError(ValueError):
    """A trigger that cannot be used; the message says why, for a person or a model to fix."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TriggerError(f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC") from None


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
        trigger._cron()  # validates
        return trigger

    @classmethod
    def every(cls, seconds: float, timezone: str, start: datetime) -> Trigger:
        if not math.isfinite(seconds) or seconds <= 0:
            raise TriggerError("an interval is a positive number of seconds")
        zone(timezone)
        return cls("interval", f"{seconds:g}", timezone, start.astimezone(UTC))

    @classmethod
    def once(cls, at: str, timezone: str) -> Trigger:
        """``at``: ISO 8601; without an offset it is local time in ``timezone``."""
        try:
            when = datetime.fromisoformat(at.strip().replace("Z", "+00:00"))
        except ValueError:
            raise TriggerError(f"cannot read the time {at!r}; use ISO 8601 like 2026-05-01T17:00") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=zone(timezone))
        return cls("once", when.astimezone(UTC).isoformat(), timezone)

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
        trigger = self._cron()
        # Arithmetic in UTC: an aware local datetime plus a timedelta moves its wall clock, not real time.
        now = now.astimezone(UTC)
        probe = max(now, fired.astimezone(UTC) + timedelta(seconds=1)) if fired else now
        hourly = self.spec.split()[1] in ("*", "*/1")
        local = zone(self.timezone)
        for _ in range(FOLD_PROBES):
            candidate = trigger.get_next_fire_time(None, probe)
            if candidate is None:
                return None
            # In the hour the clocks go back APScheduler can answer a time already passed: look further on.
            if candidate < probe:
                probe += timedelta(minutes=30)
                continue
            candidate = candidate.astimezone(UTC)
            # The same local time again that night: a job at a fixed hour fires once (the first time); one
            # that runs every hour keeps every real hour.
            if fired is not None and not hourly and _wall(candidate, local) == _wall(fired, local):
                probe = candidate.astimezone(UTC) + timedelta(seconds=1)
                continue
            return candidate
        raise TriggerError(f"the cron expression {self.spec!r} gave no usable next time")

    def shortest_gap(self, now: datetime) -> float | None:
        """The shortest time between two fires, in seconds (None: it fires once)."""
        if self.kind == "once":
            return None
        if self.kind == "interval":
            return float(self.spec)
        fires: list[datetime] = []
        fired: datetime | None = None
        for _ in range(SAMPLE_FIRES):
            fired = self.next_after(fired, now if fired is None else fired)
            if fired is None:
                break
            fires.append(fired)
        gaps = [(b - a).total_seconds() for a, b in zip(fires, fires[1:], strict=False)]
        return min(gaps) if gaps else None

    def describe(self) -> str:
        if self.kind == "cron":
            return f"cron '{self.spec}' ({self.timezone})"
        if self.kind == "interval":
            return f"every {_span(float(self.spec))}"
        at = datetime.fromisoformat(self.spec).astimezone(zone(self.timezone))
        return f"once at {at:%Y-%m-%d %H:%M} ({self.timezone})"

    def _cron(self) -> CronTrigger:
        try:
            return CronTrigger.from_crontab(self.spec, timezone=zone(self.timezone))
        except TriggerError:
            raise
        except ValueError as exc:
            raise TriggerError(
                f"cannot read the cron expression {self.spec!r} ({exc}); five fields: minute hour day month "
                "day-of-week, e.g. '0 8 * * mon-fri' for weekdays at 08:00"
            ) from None

    # -- storage ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "spec": self.spec, "timezone": self.timezone}
        if self.anchor is not None:
            out["anchor"] = self.anchor.isoformat()
        return out

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Trigger:
        anchor = datetime.fromisoformat(data["anchor"]) if data.get("anchor") else None
        kind: Kind = data["kind"]  # type: ignore[assignment]
        return cls(kind, data["spec"], data["timezone"], anchor)


def _wall(moment: datetime, local: ZoneInfo) -> tuple[int, int, int, int, int]:
    """The local clock's reading (a time the clocks pass twice reads the same both times)."""
    moment = moment.astimezone(local)
    return moment.year, moment.month, moment.day, moment.hour, moment.minute


def _span(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} s"
