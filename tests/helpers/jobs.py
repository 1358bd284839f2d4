"""Shared values for the scheduled-job tests."""

from __future__ import annotations

from zoneinfo import ZoneInfo

BERLIN = ZoneInfo("Europe/Berlin")
