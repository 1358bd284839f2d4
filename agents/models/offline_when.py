"""When a reminder asked of the offline model is due: "in 2 minutes", "tomorrow at 9", "at 5 pm", "at 17:30",
"on Friday at 10", before or after what to be reminded of ("remind me to send the report at 5 pm").

A wall-clock time is read in the model's time zone (``jobs.timezone``) on the clock it was given, and becomes the
``at`` of ``schedule_message`` with its UTC offset; a delay becomes ``in_minutes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

_CLOCK = r"(?:\d{1,2}(?:[:.]\d{2})?(?:\s*[ap]\.?m\b\.?)?|noon|midday|midnight)"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = rf"(?:today|tonight|tomorrow|(?:on |next |this )?(?:{'|'.join(_WEEKDAYS)}))"
_DELAY = r"in (?:\d+(?:\.\d+)?|an?|one) ?(?:minutes?|mins?|hours?|hrs?|seconds?|secs?|days?)"
_WHEN = rf"(?:{_DELAY}|{_DAY}(?:,? (?:at|by) {_CLOCK})?|(?:at|by) {_CLOCK}(?:,? {_DAY})?)"
_THAT = r"(?:(?:to|that|of|about)\s+)"
REMIND = re.compile(
    rf"\bremind me,? (?:(?P<when>{_WHEN})[,:]?\s+{_THAT}?(?P<what>.+)|{_THAT}(?P<what2>.+?),? (?P<when2>{_WHEN}))"
    r"\s*[.!?]*\s*$",
    re.IGNORECASE,
)
_UNITS = {"s": 1 / 60, "m": 1.0, "h": 60.0, "d": 24 * 60.0}


@dataclass(frozen=True)
class Reminder:
    what: str
    in_minutes: float | None = None
    """A delay ("in 2 minutes", a bare "tomorrow": 24 h)."""
    clock: tuple[int, int] | None = None
    """A wall-clock time (hour, minute), read on :meth:`due`."""
    day: str = ""
    """today, tomorrow or a weekday; '' with a clock time: its next occurrence."""
    half: str = ""
    """am/pm as written."""

    def due(self, now: datetime, zone: str) -> datetime:
        """The aware due time for a wall-clock reminder, ``now`` (aware) read in ``zone``."""
        assert self.clock is not None
        tz = ZoneInfo(zone)
        local = now.astimezone(tz)
        hour, minute = self.clock
        hours = [hour]
        if not self.half and 1 <= hour <= 11 and not self.day:
            hours.append(hour + 12)  # "at 9" at 10:00 is 21:00 today, as a person means it
        if self.day == "tomorrow":
            first = 1
        elif self.day in _WEEKDAYS:
            first = (_WEEKDAYS.index(self.day) - local.weekday()) % 7
        else:
            first = 0
        for days in range(first, first + 8, 7 if self.day in _WEEKDAYS else 1):
            date = (local + timedelta(days=days)).date()
            for h in sorted(hours):
                at = datetime(date.year, date.month, date.day, h, minute, tzinfo=tz)
                if at > local:
                    return at
        raise AssertionError("a time within eight days is always ahead")  # pragma: no cover


def reminder(text: str) -> Reminder | None:
    """What a "remind me …" request asks, or None."""
    found = REMIND.search(text)
    if found is None:
        return None
    when = (found.group("when") or found.group("when2")).lower()
    what = (found.group("what") or found.group("what2")).strip().rstrip(".!?")
    if not what:
        return None
    delay = re.match(r"in (\d+(?:\.\d+)?|an?|one) ?(\w)", when)
    if delay:
        n = 1.0 if delay.group(1) in ("a", "an", "one") else float(delay.group(1))
        return Reminder(what, in_minutes=max(n * _UNITS[delay.group(2)], 0.1))
    day = re.search(rf"\b(today|tonight|tomorrow|{'|'.join(_WEEKDAYS)})\b", when)
    day_word = day.group(1) if day else ""
    at = re.search(r"\b(?:at|by) (\d{1,2})(?:[:.](\d{2}))?(?:\s*([ap])\.?m\b)?|\b(noon|midday|midnight)\b", when)
    if at is None:
        if day_word == "tomorrow":
            return Reminder(what, in_minutes=24 * 60.0)
        if day_word in _WEEKDAYS:
            return Reminder(what, clock=(9, 0), day=day_word, half="am")
        return None  # "today", "tonight": no time said
    if at.group(4):
        hour, minute, half = (12 if at.group(4).lower() != "midnight" else 0), 0, "pm"
    else:
        hour, minute, half = int(at.group(1)), int(at.group(2) or 0), (at.group(3) or "").lower()
        if hour > 23 or minute > 59 or (half and not 1 <= hour <= 12):
            return None
        if half == "p" and hour < 12:
            hour += 12
        elif half == "a" and hour == 12:
            hour = 0
        elif day_word == "tonight" and 1 <= hour <= 11:
            hour, half = hour + 12, "p"
    return Reminder(what, clock=(hour, minute), day="" if day_word in ("today", "tonight") else day_word, half=half)
