"""``agents`` reads time on the clock it is given (:mod:`agents.clock`), and the gateway's clock fits that port:
a test's ``FakeClock`` moves a scripted model's pauses, the time ``get_current_time`` tells, the offline model's
"now" and a run context's time, without real waiting."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from agents.clock import SYSTEM_CLOCK, Clock
from agents.context import RunContext
from agents.messages import Message
from agents.models.offline import OfflineModel
from agents.models.scripted import ScriptedModel, Streamed
from agents.tools import ToolsConfig, builtin_toolset
from bot.clock import SYSTEM_CLOCK as GATEWAY_CLOCK
from bot.clock import FakeClock

START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def test_the_gateways_clocks_fit_the_agents_port() -> None:
    clocks: list[Clock] = [GATEWAY_CLOCK, FakeClock(START), SYSTEM_CLOCK]  # bot.clock's fit without adapting
    assert clocks[1].now() == START
    assert RunContext(chat_key="c", model=ScriptedModel()).clock == SYSTEM_CLOCK.time


async def test_a_scripted_models_pauses_are_on_its_clock() -> None:
    clock = FakeClock(START)
    model = ScriptedModel([Streamed(("It is ", "sunny", "."), delay_s=60.0)], clock=clock)
    seen: list[object] = []

    async def read() -> None:
        async for part in model.stream([Message.user("weather?")]):
            seen.append(part)

    reading = asyncio.ensure_future(read())
    await clock.armed()
    assert seen == ["It is "], "the next piece waits a minute of the model's clock"
    await clock.advance(60.0)
    await clock.armed()
    assert seen == ["It is ", "sunny"]
    await clock.advance(60.0)
    await reading
    assert seen[-2] == "." and model.remaining == 0


async def test_get_current_time_and_the_offline_model_tell_the_clocks_time(tmp_path: Path) -> None:
    clock = FakeClock(START)
    tools = {t.name: t for t in builtin_toolset(ToolsConfig(workspace=tmp_path), clock=clock).tools}
    await clock.advance(90 * 60)
    assert (await tools["get_current_time"].invoke({"timezone": "UTC"})).startswith("2026-03-01T09:30:00+00:00")
    assert OfflineModel(now=clock.now).now() == datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
