"""Jobs through the gateway: an agent makes a job with schedule_job, /jobs lists it in the chat's time zone,
fires happen once at their time (a controllable clock), a prompt job runs an agent as the job's owner,
pause/resume/delete, limits and the minimum interval."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.models.scripted import ScriptedModel, call

BERLIN = ZoneInfo("Europe/Berlin")


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def set(self, moment: datetime) -> None:
        self.now = moment.timestamp()


async def test_a_message_job_fires_once_at_local_time(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("schedule_job", {"name": "standup", "message": "stand-up in 5", "cron": "0 8 * * mon-fri"}),
            "Done: weekdays at 08:00.",
        ]
    )
    h = await make_harness(model)
    clock = Clock(datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))  # a Thursday
    h.gateway.jobs.clock = clock
    assert await h.say("/timezone Europe/Berlin") == [
        "Time zone set to Europe/Berlin: new jobs' times are read there (existing jobs keep theirs)."
    ]
    assert await h.say("@react every weekday at 8 tell me stand-up in 5") == ["Done: weekdays at 08:00."]
    [listing] = await h.say("/jobs")
    assert "standup — cron '0 8 * * mon-fri' (Europe/Berlin); next Fri 2026-11-27 08:00 (Europe/Berlin)" in listing
    assert await h.gateway.jobs.tick() == 0
    clock.set(datetime(2026, 11, 27, 8, 0, 5, tzinfo=BERLIN))
    assert await h.gateway.jobs.tick() == 1
    assert await h.gateway.jobs.tick() == 0, "once"
    assert h.channel.texts()[-1] == "⏰ stand-up in 5"
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert job.next_fire_at == datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "Monday 08:00 Berlin"


async def test_a_prompt_job_runs_an_agent_as_its_owner(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call(
                "schedule_job", {"name": "digest", "prompt": "summarise my day", "agent": "react", "every_minutes": 60}
            ),
            "Scheduled.",
            "Your day: nothing much.",
        ]
    )
    h = await make_harness(model)
    clock = Clock(datetime(2026, 11, 26, 9, 0, tzinfo=UTC))
    h.gateway.jobs.clock = clock
    await h.say("@react every hour summarise my day")
    clock.set(datetime(2026, 11, 26, 10, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    assert h.channel.texts()[-1] == "Your day: nothing much."
    assert model.requests[-1].messages[-1].text == "summarise my day"
    await h.gateway.jobs.follow()
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert [(attempt, status) for _due, attempt, status, _d in await h.gateway.jobs.jobs.fires(job.id)] == [(0, "done")]
    model.assert_complete()


async def test_job_management_and_limits(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("schedule_job", {"name": "spam", "message": "hi", "cron": "* * * * *"}, id="c1"),
            "Too often.",
            call("schedule_job", {"name": "tea", "message": "tea time", "at": "2026-11-26T16:00"}, id="c2"),
            "Scheduled.",
        ]
    )
    h = await make_harness(model, jobs={"timezone": "Europe/Berlin"})
    h.gateway.jobs.clock = Clock(datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))
    await h.say("@react say hi every minute")
    refusal = model.requests[1].messages[-1]
    assert "shortest interval allowed is 5 min" in str(refusal.tool_results[0].content)
    await h.say("@react remind me at 4 pm: tea time")
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert (await h.say(f"/jobs pause {job.id}")) == [f"Job {job.id} paused."]
    assert "paused" in (await h.say("/jobs"))[0]
    [resumed] = await h.say(f"/jobs resume {job.id}")
    assert resumed.startswith(f"Job {job.id} resumed; next at Thu 2026-11-26 16:00 (Europe/Berlin)")
    assert (await h.say(f"/jobs delete {job.id}")) == [f"Job {job.id} deleted."]
    assert (await h.say("/jobs"))[0].startswith("No jobs in this chat")
    assert (await h.say("/jobs delete nope"))[0] == "No job nope here (/jobs lists them)."
