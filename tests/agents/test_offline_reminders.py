"""The offline model reads when a reminder is due: a delay, or a wall-clock time in its time zone on its clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.messages import Message
from agents.models.base import ToolDeclaration
from agents.models.offline import OfflineModel
from agents.models.offline_when import reminder

THURSDAY_1030_BERLIN = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)  # 10:30 in Berlin (UTC+1)
SCHEDULE = ToolDeclaration(name="schedule_message", parameters={"type": "object", "properties": {}})


async def scheduled(text: str, zone: str = "Europe/Berlin") -> dict[str, object]:
    model = OfflineModel(now=lambda: THURSDAY_1030_BERLIN, timezone=zone)
    answer = await model.request([Message.user(text)], tools=[SCHEDULE])
    [call] = answer.tool_calls
    assert call.name == "schedule_message"
    return dict(call.args)


@pytest.mark.parametrize(
    ("text", "at", "what"),
    [
        ("remind me tomorrow at 9 to call mom", "2026-11-27T09:00:00+01:00", "call mom"),
        ("remind me at 5 pm to send the report", "2026-11-26T17:00:00+01:00", "send the report"),
        ("remind me at 17:30 to leave", "2026-11-26T17:30:00+01:00", "leave"),
        ("Remind me on Friday at 10 to water the plants.", "2026-11-27T10:00:00+01:00", "water the plants"),
        ("remind me on Thursday at 10am that the shop opens", "2026-12-03T10:00:00+01:00", "the shop opens"),
        ("remind me to call mom tomorrow at 9", "2026-11-27T09:00:00+01:00", "call mom"),
        ("remind me to send the report at 5 pm", "2026-11-26T17:00:00+01:00", "send the report"),
        ("remind me at 9 to call mom", "2026-11-26T21:00:00+01:00", "call mom"),  # 09:00 has passed
        ("remind me at noon: lunch", "2026-11-26T12:00:00+01:00", "lunch"),
        ("remind me tonight at 8 to call dad", "2026-11-26T20:00:00+01:00", "call dad"),
        ("remind me at 12 am to sleep", "2026-11-27T00:00:00+01:00", "sleep"),
    ],
)
async def test_a_wall_clock_time_in_the_model_s_zone(text: str, at: str, what: str) -> None:
    assert await scheduled(text) == {"text": f"Reminder: {what}", "at": at}


async def test_the_zone_is_the_model_s_and_a_summer_date_gets_its_own_offset() -> None:
    assert (await scheduled("remind me tomorrow at 9 to call mom", "UTC"))["at"] == "2026-11-27T09:00:00+00:00"
    model = OfflineModel(now=lambda: datetime(2026, 3, 28, 12, 0, tzinfo=UTC), timezone="Europe/Berlin")
    [call] = (await model.request([Message.user("remind me tomorrow at 9 to call mom")], tools=[SCHEDULE])).tool_calls
    assert call.args["at"] == "2026-03-29T09:00:00+02:00", "the clocks went forward that night"


@pytest.mark.parametrize(
    ("text", "minutes", "what"),
    [
        ("remind me in 2 minutes to stretch", 2.0, "stretch"),
        ("remind me to stretch in 2 minutes", 2.0, "stretch"),
        ("remind me in an hour to eat", 60.0, "eat"),
        ("remind me in 2 days to pay the rent", 2880.0, "pay the rent"),
        ("remind me tomorrow to call mom", 1440.0, "call mom"),
    ],
)
async def test_a_delay(text: str, minutes: float, what: str) -> None:
    assert await scheduled(text) == {"text": f"Reminder: {what}", "in_minutes": minutes}


@pytest.mark.parametrize(
    "text", ["remind me of the wifi password", "remind me at 25 to eat", "remind me today to eat", "remind me"]
)
def test_what_is_not_a_reminder_it_can_schedule(text: str) -> None:
    assert reminder(text) is None
