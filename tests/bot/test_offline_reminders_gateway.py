"""Through the gateway, on its clock: the offline model's "tomorrow at 9" is 09:00 tomorrow in ``jobs.timezone``,
and the README's "remind me at 5 pm to send the report" is understood."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.clock import FakeClock
from tests.waiting import eventually


async def test_tomorrow_at_9_and_at_5_pm_on_the_gateway_s_clock(make_harness: Any) -> None:
    clock = FakeClock(datetime(2026, 11, 26, 9, 30, tzinfo=UTC))  # Thursday 10:30 in Berlin
    h = await make_harness(
        None,
        clock=clock,
        routing={"strategy": "hybrid"},
        channels={"console": {"streaming": False}},
        jobs={"timezone": "Europe/Berlin"},
    )
    [first] = await h.say("remind me tomorrow at 9 to call mom")
    assert first.startswith("[offline model]") and "scheduled" in first, first
    [second] = await h.say("remind me at 5 pm to send the report")
    assert "scheduled" in second, second
    pending = sorted((p["due_at"], p["text"]) for p in await h.gateway.scheduled.pending(str(h.chat())))
    assert pending == [
        (datetime(2026, 11, 26, 16, 0), "Reminder: send the report"),  # 17:00 in Berlin (naive UTC rows)
        (datetime(2026, 11, 27, 8, 0), "Reminder: call mom"),  # 09:00 tomorrow in Berlin
    ]
    await clock.advance(6.5 * 3600)
    await eventually(lambda: "⏰ Reminder: send the report" in h.channel.texts(), what="the 5 pm reminder")
    assert "⏰ Reminder: call mom" not in h.channel.texts()
