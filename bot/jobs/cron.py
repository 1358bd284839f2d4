"""Crontab expressions read as cron reads them (Vixie cron / cronie, POSIX): what a person who has written a
crontab line expects.

Five fields, ``minute hour day-of-month month day-of-week``; each is ``*``, a number, a range ``a-b``, a step
``*/n``, ``a-b/n`` or ``a/n`` (``a`` to the field's end), or a comma list of those. Months and weekdays may be
names (``jan``, ``mon-fri``, any case). Weekdays count from Sunday: ``0`` and ``7`` are both Sunday, so ``1-5`` is
Monday to Friday. When the day-of-month and the day-of-week fields are both restricted (neither starts with
``*``), a day matches either of them (``0 9 1 * mon``: the 1st of each month and every Monday); when one starts
with ``*`` the other alone decides. Macros: ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily``
(``@midnight``), ``@hourly``.

Not read (refused with a reason): six-field (seconds) or Quartz expressions, ``?``, ``L``, ``W``, ``#``,
``@reboot``, and ranges that wrap (``fri-mon``: write ``fri-sun,mon`` or ``0,1,5-7``).

This module knows nothing of clocks or zones: :mod:`bot.jobs.schedule` turns matching days and times of day into
instants.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
EXAMPLE = "five fields: minute hour day-of-month month day-of-week, e.g. '0 8 * * 1-5' for weekdays at 08:00"
LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class CronError(ValueError):
    """An expression cron would not read; the message says what and where (it does not repeat the expression)."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_name: int = 0
    """The number of ``names[0]``."""


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, MONTH_NAMES, 1),
    _Field("day-of-week", 0, 7, DAY_NAMES, 0),
)


@dataclass(frozen=True)
class CronExpression:
    """A parsed expression: the sets of values each field allows, and which day rule applies."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday … 6 = Saturday (a ``7`` in the text is folded into 0)."""
    day_star: bool
    """The day-of-month field starts with ``*`` (cron's test: ``*/2`` counts as a star too)."""
    weekday_star: bool
    times: tuple[int, ...]
    """Minutes of the day (``hour * 60 + minute``) the expression fires at, ascending."""

    @property
    def every_hour(self) -> bool:
        """Whether the job's meaning is "every hour": its hours are all 24, however the field is written
        (``*``, ``*/1``, ``0-23``). Such a job fires in both passes of an hour the clocks repeat."""
        return len(self.hours) == 24

    @property
    def either_day(self) -> bool:
        """Both day fields restricted: a day matches when either does."""
        return not (self.day_star or self.weekday_star)

    def on(self, day: date) -> bool:
        """Whether the expression fires on ``day`` (a local calendar date)."""
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = day.isoweekday() % 7 in self.weekdays
        return (by_date or by_weekday) if self.either_day else (by_date and by_weekday)


def parse(expression: str) -> CronExpression:
    """Read ``expression``; :class:`CronError` says why it cannot be read."""
    text = " ".join(expression.split())
    fields = _expand(text).split(" ")
    if len(fields) != 5:
        raise CronError(f"it has {len(fields)} field(s); {EXAMPLE}")
    minutes, hours, days, months, weekdays = (
        _values(value, field) for value, field in zip(fields, _FIELDS, strict=True)
    )
    weekdays = {d % 7 for d in weekdays}
    day_star, weekday_star = fields[2].startswith("*"), fields[4].startswith("*")
    if weekday_star and not any(min(days) <= LONGEST_MONTH[m - 1] for m in months):
        raise CronError("it never fires: no month it allows has that day of the month")
    return CronExpression(
        text=text,
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=frozenset(days),
        months=frozenset(months),
        weekdays=frozenset(weekdays),
        day_star=day_star,
        weekday_star=weekday_star,
        times=tuple(h * 60 + m for h in sorted(hours) for m in sorted(minutes)),
    )


def _expand(text: str) -> str:
    if not text.startswith("@"):
        return text
    macro = MACROS.get(text.lower())
    if macro is None:
        known = ", ".join(MACROS)
        raise CronError(f"{text} is not a schedule this bot runs; the macros are {known}")
    return macro


def _values(text: str, field: _Field) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        values |= _item(item, field, text)
    return values


def _item(item: str, field: _Field, whole: str) -> set[int]:
    where = f"the {field.name} field" + (f" {whole!r}" if whole != item else "")
    if not item:
        raise CronError(f"{where} has an empty item")
    body, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise CronError(f"{where}: the step after '/' must be a whole number from 1")
        step = int(step_text)
    if body == "*":
        low, high = field.low, (6 if field.name == "day-of-week" else field.high)
    elif "-" in body:
        first, _, last = body.partition("-")
        low, high = _number(first, field, where), _number(last, field, where)
        if low > high:
            raise CronError(f"{where}: the range {body!r} runs backwards (cron does not wrap ranges; use a list)")
    else:
        low = _number(body, field, where)
        high = field.high if slash else low
    return set(range(low, high + 1, step))


def _number(text: str, field: _Field, where: str) -> int:
    lowered = text.lower()
    if lowered in field.names:
        return field.names.index(lowered) + field.first_name
    if not text.isdigit():
        hint = {"?": "use '*'", "l": "'L' is not standard cron", "w": "'W' is not standard cron"}.get(lowered[-1:], "")
        if "#" in text:
            hint = "'#' is not standard cron"
        names = f" or a name ({'-'.join(field.names[:1] + field.names[-1:])})" if field.names else ""
        raise CronError(f"{where}: {text!r} is not a number{names}" + (f"; {hint}" if hint else ""))
    value = int(text)
    if not field.low <= value <= field.high:
        raise CronError(f"{where}: {value} is out of range {field.low}-{field.high}")
    return value
