"""``get_current_time``: the current time in an IANA time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agents.tools.base import Tool, ToolError, tool


def time_tools() -> list[Tool]:
    @tool(risk="safe")
    async def get_current_time(timezone: str = "UTC") -> str:
        """The current date and time in a time zone (IANA name such as Europe/Paris or Asia/Shanghai)."""
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(
                f"unknown time zone {timezone!r}; use an IANA name like 'Europe/London' or 'America/New_York'"
            ) from None
        now = datetime.now(zone)
        return now.strftime(f"%Y-%m-%d %H:%M:%S %Z (UTC%z), %A, in {timezone}")

    return [get_current_time]
