"""``get_current_time``: the current time in an IANA time zone (or a fixed UTC offset)."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from agents.clock import SYSTEM_CLOCK
from agents.tools.base import Tool, ToolError, tool

_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
_HOW = "use an IANA name such as 'UTC', 'Europe/London', 'America/New_York' or 'Asia/Shanghai', or 'UTC+8'"


@functools.cache
def _zones() -> dict[str, str]:
    """Known zone names by their lower-case spelling."""
    return {name.lower(): name for name in available_timezones()}


def find_zone(name: str) -> tuple[tzinfo, str]:
    """The zone called ``name`` and its canonical spelling; :class:`ToolError` with hints otherwise."""
    text = name.strip()
    if text.upper() in ("UTC", "GMT", "Z"):
        return UTC, "UTC"
    offset = _OFFSET.match(text)
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours > 14 or minutes >= 60:
            raise ToolError(f"UTC offset out of range: {name!r} (at most ±14:00)")
        delta = timedelta(hours=hours, minutes=minutes) * (-1 if sign == "-" else 1)
        label = f"UTC{sign}{hours:02d}:{minutes:02d}"
        return dt_timezone(delta, label), label
    for candidate in dict.fromkeys((_zones().get(text.lower()), text)):
        if candidate:
            try:
                return ZoneInfo(candidate), candidate
            except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: 'Europe' is a folder of zones
                pass
    close = difflib.get_close_matches(text.lower(), list(_zones()), n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(_zones()[c]) for c in close)}?" if close else ""
    raise ToolError(f"unknown time zone {name[:80]!r}; {_HOW}.{hint}")


def time_tools(clock: Callable[[], datetime] | None = None) -> list[Tool]:
    """``get_current_time``, on ``clock`` (an aware datetime source: the gateway's clock's ``now``)."""
    now_utc = clock or SYSTEM_CLOCK.now

    @tool(risk="safe")
    async def get_current_time(timezone: str = "UTC") -> str:
        """The current date and time in a time zone (IANA name such as Europe/Paris or Asia/Shanghai; default UTC)."""
        zone, label = find_zone(timezone)
        now = now_utc().astimezone(zone)
        offset = now.strftime("%z")
        offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
        abbrev = now.tzname() or ""
        if label == offset:
            shown = label
        elif abbrev and abbrev != label:
            shown = f"{label} ({abbrev}, {offset})"
        else:
            shown = f"{label} ({offset})"
        return f"{now.isoformat(timespec='seconds')}, {now.strftime('%A %d %B %Y, %H:%M:%S')} in {shown}"

    return [get_current_time]
