"""A cron expression's meaning in words ("at 08:00 on Monday to Friday"), so a wrong one is seen before it fires:
the ``schedule_job`` result and ``/jobs`` show it beside the expression."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.jobs.cron import CronExpression

WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
LISTED_TIMES = 6
"""At most this many times of day are listed one by one ("at 08:00 and 17:30"); more are summarised."""


def describe(cron: CronExpression) -> str:
    """The expression in words, without the time zone."""
    parts = [_times(cron)]
    days = _days(cron)
    if days:
        parts.append(days)
    if len(cron.days) == 1 and len(cron.months) == 1 and len(cron.weekdays) == 7 and not cron.either_day:
        parts.append(f"on {min(cron.days)} {MONTHS[min(cron.months) - 1]}")
        return " ".join(parts)
    if not days and parts[0].startswith("at "):
        parts.append("every day")
    if len(cron.months) < 12:
        parts.append("in " + _join(_runs(sorted(cron.months), lambda m: MONTHS[m - 1])))
    return " ".join(parts)


def _times(cron: CronExpression) -> str:
    minutes, hours = cron.minutes, cron.hours
    if len(cron.times) <= LISTED_TIMES:
        return "at " + _join([f"{t // 60:02d}:{t % 60:02d}" for t in cron.times])
    step = _step(minutes, 60)
    past = _join([f":{m:02d}" for m in minutes])
    if len(minutes) == 60:
        each = "every minute"
    elif step is not None and minutes[0] == 0:
        each = f"every {step} minutes"
    else:
        each = f"at {past}"
    if cron.every_hour:
        return each if each != f"at {past}" else f"every hour at {past}"
    hour_step = _step(hours, 24)
    if len(minutes) == 1 and hour_step is not None and hours[0] < hour_step:
        start = f"{hours[0]:02d}:{minutes[0]:02d}"
        return f"every {hour_step} hours from {start}" if hour_step > 1 else f"every hour at :{minutes[0]:02d}"
    if len(minutes) == 1 and _contiguous(hours):
        return f"every hour from {hours[0]:02d}:{minutes[0]:02d} to {hours[-1]:02d}:{minutes[0]:02d}"
    during = "during the hours " + _join(_runs(list(hours), lambda h: f"{h:02d}"))
    return f"{each} {during}"


def _days(cron: CronExpression) -> str:
    weekdays = sorted(cron.weekdays, key=lambda d: (d + 6) % 7)  # Monday first
    by_weekday = "on " + _join(_runs(weekdays, lambda d: WEEKDAYS[d], key=lambda d: (d + 6) % 7))
    all_days, all_weekdays = len(cron.days) == 31, len(cron.weekdays) == 7
    by_date = _dates(sorted(cron.days))
    if cron.either_day:
        return f"{by_date} and every {by_weekday.removeprefix('on ')}" if not (all_days or all_weekdays) else ""
    if all_days and all_weekdays:
        return ""
    if all_days:
        return by_weekday
    if all_weekdays:
        if len(cron.days) == 1 and len(cron.months) == 1:
            return ""  # said with the month: "on 1 January"
        return by_date
    return f"{by_date} when it is a {by_weekday.removeprefix('on ')}"


def _dates(days: list[int]) -> str:
    step = days[1] - days[0] if len(days) > 3 else 0
    if step > 1 and days == list(range(days[0], 32, step)):
        return f"on every {_ordinal(step)} day of the month from the {_ordinal(days[0])}"
    return f"on day{'s' if len(days) > 1 else ''} " + _join(_runs(days, str)) + " of the month"


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _runs(values: Sequence[int], name: Callable[[int], str], key: Callable[[int], int] = lambda v: v) -> list[str]:
    """``values`` (sorted by ``key``) with runs of three or more written as "first to last"."""
    out: list[str] = []
    index = 0
    while index < len(values):
        end = index
        while end + 1 < len(values) and key(values[end + 1]) == key(values[end]) + 1:
            end += 1
        if end - index >= 2:
            out.append(f"{name(values[index])} to {name(values[end])}")
        else:
            out.extend(name(v) for v in values[index : end + 1])
        index = end + 1
    return out


def _step(values: Sequence[int], size: int) -> int | None:
    """The step when ``values`` are every n-th value of ``0..size-1`` from their first (n divides ``size``)."""
    if len(values) < 2:
        return None
    step = values[1] - values[0]
    if size % step or list(values) != list(range(values[0], size, step)):
        return None
    return step


def _contiguous(values: Sequence[int]) -> bool:
    return len(values) > 1 and list(values) == list(range(values[0], values[-1] + 1))


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
