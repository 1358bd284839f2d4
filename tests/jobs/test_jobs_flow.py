"""Jobs through the gateway: an agent makes a job with schedule_job, /jobs lists it in the chat's time zone,
fires happen once at their time (a controllable clock), a prompt job runs an agent as the job's owner,
pause/resume/delete, limits and the minimum interval."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.models.scripted import ScriptedModel, call
from bot.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")


async def driven(make_harness: Any, model: Any, start: datetime, **options: Any) -> tuple[Any, FakeClock]:
    """A gateway on a clock the test moves, its job timer stopped: the test ticks."""
    clock = FakeClock(start)
    h = await make_harness(model, clock=clock, **options)
    await h.gateway.jobs.stop()
    return h, clock


async def test_a_message_job_fires_once_at_local_time(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call("schedule_job", {"name": "standup", "message": "stand-up in 5", "cron": "0 8 * * mon-fri"}),
            "Done: weekdays at 08:00.",
        ]
    )
    h, clock = await driven(make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))  # a Thursday
    assert await h.say("/timezone Europe/Berlin") == [
        "Time zone set to Europe/Berlin: new jobs' times are read there (existing jobs keep theirs)."
    ]
    assert await h.say("@react every weekday at 8 tell me stand-up in 5") == ["Done: weekdays at 08:00."]
    [listing] = await h.say("/jobs")
    assert (
        "standup — at 08:00 on Monday to Friday, Europe/Berlin (cron '0 8 * * mon-fri'); "
        "next Fri 2026-11-27 08:00 (Europe/Berlin)"
    ) in listing
    assert await h.gateway.jobs.tick() == 0
    await clock.advance_to(datetime(2026, 11, 27, 8, 0, 5, tzinfo=BERLIN))
    assert await h.gateway.jobs.tick() == 1
    assert await h.gateway.jobs.tick() == 0, "once"
    assert h.channel.texts()[-1] == "⏰ stand-up in 5"
    from prometheus_client import generate_latest

    assert 'bot_job_fires_total{outcome="sent"} 1.0' in generate_latest(h.gateway.metrics.registry).decode()
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
    h, clock = await driven(make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=UTC))
    await h.say("@react every hour summarise my day")
    await clock.advance_to(datetime(2026, 11, 26, 10, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    assert h.channel.texts()[-1] == "Your day: nothing much."
    assert model.requests[-1].messages[-1].text == "summarise my day"
    await h.gateway.store.flush()  # the run's end is written unawaited
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
    h, _clock = await driven(
        make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN), jobs={"timezone": "Europe/Berlin"}
    )
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


async def test_missed_fires_past_the_grace_are_recorded_and_a_late_one_within_it_runs(make_harness: Any) -> None:
    model = ScriptedModel(
        [call("schedule_job", {"name": "water", "message": "water the plants", "cron": "0 8 * * *"}, id="c1"), "Ok."]
    )
    h, clock = await driven(
        make_harness,
        model,
        datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN),
        jobs={"timezone": "Europe/Berlin", "grace_s": 1800},
    )
    await h.say("@react every day at 8 remind me to water the plants")
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    await clock.advance_to(datetime(2026, 11, 30, 12, 0, tzinfo=BERLIN))  # down from Friday to Monday noon
    assert await h.gateway.jobs.tick() == 1
    notice = h.channel.texts()[-1]
    assert notice.startswith(
        f"⏰ Job {job.id} (water) missed 4 fires while I was offline (the last at 2026-11-30 08:00)"
    )
    assert notice.endswith("next: 2026-12-01 08:00.")
    assert "water the plants" not in "".join(h.channel.texts()[-1:])
    await clock.advance_to(datetime(2026, 12, 1, 8, 10, tzinfo=BERLIN))  # 10 minutes late: within the grace
    assert await h.gateway.jobs.tick() == 1
    assert h.channel.texts()[-1] == "⏰ water the plants\n(late: I was offline when this was due)"
    statuses = [status for _due, _attempt, status, _detail in await h.gateway.jobs.jobs.fires(job.id)]
    assert statuses == ["missed", "done"]


async def test_a_daily_job_fires_once_on_the_nights_the_clocks_change(make_harness: Any) -> None:
    model = ScriptedModel(
        [call("schedule_job", {"name": "late", "message": "backup", "cron": "30 2 * * *"}, id="c1"), "Ok."]
    )
    h, clock = await driven(
        make_harness, model, datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN), jobs={"timezone": "Europe/Berlin"}
    )
    await h.say("@react every night at 2:30 say backup")
    fired = 0
    for _ in range(2 * 24 * 6):  # two days in 10-minute steps, through the night the clocks go back
        await clock.advance(600)
        fired += await h.gateway.jobs.tick()
    assert fired == 2, "once on the 25th (02:30 happens twice), once on the 26th"
    assert h.channel.texts().count("⏰ backup") == 2


async def test_a_failed_run_is_told_and_tried_again(make_harness: Any) -> None:
    from agents.models.base import ModelUnavailable

    model = ScriptedModel(
        [
            call(
                "schedule_job", {"name": "news", "prompt": "any news?", "agent": "react", "every_minutes": 60}, id="c1"
            ),
            "Scheduled.",
            ModelUnavailable("the provider is down"),
            "Nothing new today.",
        ]
    )
    h, clock = await driven(
        make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=UTC), jobs={"retry": {"attempts": 1, "delay_s": 300}}
    )
    await h.say("@react every hour: any news?")
    await clock.advance_to(datetime(2026, 11, 26, 10, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    assert any("The model failed" in t for t in h.channel.texts())
    await h.gateway.store.flush()  # the run's end is written unawaited
    await h.gateway.jobs.follow()
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert (
        f"⚠️ Job {job.id} (news) did not finish (failed); I will try again in 5 min (try 2 of 2)."
    ) in h.channel.texts()
    await clock.advance_to(datetime(2026, 11, 26, 10, 5, 2, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    assert h.channel.texts()[-1] == "Nothing new today."
    await h.gateway.store.flush()  # the run's end is written unawaited
    await h.gateway.jobs.follow()
    fires = [(attempt, status) for _due, attempt, status, _d in await h.gateway.jobs.jobs.fires(job.id)]
    assert fires == [(0, "failed"), (1, "done")]
    model.assert_complete()


async def test_an_agent_job_whose_tool_needs_confirmation_asks_in_the_chat(make_harness: Any) -> None:
    from agents.tools.base import tool

    ran: list[str] = []

    @tool(confirm=True)
    async def rotate_logs(service: str) -> str:
        """Rotate a service's logs."""
        ran.append(service)
        return "rotated"

    model = ScriptedModel(
        [
            call(
                "schedule_job",
                {"name": "logs", "prompt": "rotate the web logs", "agent": "react", "cron": "0 3 * * *"},
                id="c1",
            ),
            "Scheduled.",
            call("rotate_logs", {"service": "web"}, id="c2"),
            "Rotated the web logs.",
        ]
    )
    h, clock = await driven(make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=UTC), tools=[rotate_logs])
    await h.say("@react every night at 3 rotate the web logs")
    await clock.advance_to(datetime(2026, 11, 27, 3, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    assert 'rotate_logs(service="web")' in h.prompt().text
    assert ran == [], "nothing runs before the owner approves"
    await h.gateway.store.flush()  # the run's end is written unawaited
    await h.gateway.jobs.follow()  # paused: not settled
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert [s for _d, _a, s, _x in await h.gateway.jobs.jobs.fires(job.id)] == ["started"]
    await h.click("Approve")
    assert ran == ["web"]
    assert h.channel.texts()[-1] == "Rotated the web logs."
    await h.gateway.store.flush()  # the run's end is written unawaited
    await h.gateway.jobs.follow()
    assert [s for _d, _a, s, _x in await h.gateway.jobs.jobs.fires(job.id)] == ["done"]


async def test_the_offline_model_makes_a_weekday_job(make_harness: Any) -> None:
    from agents.models.offline import OfflineModel

    h, _clock = await driven(
        make_harness, OfflineModel(), datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN), routing={"strategy": "rule"}
    )
    await h.say("/timezone Europe/Berlin")
    [reply] = await h.say("every weekday at 8 remind me to stretch")
    assert (
        "at 08:00 on Monday to Friday, Europe/Berlin (cron '0 8 * * mon-fri'); "
        "next at Fri 2026-11-27 08:00, Mon 2026-11-30 08:00, Tue 2026-12-01 08:00 (Europe/Berlin)"
    ) in reply


async def test_a_job_run_spends_its_owners_budget_and_admins_list_every_job(make_harness: Any) -> None:
    from agents.models.base import ModelResponse, Usage

    used = Usage(input_tokens=80, output_tokens=40)
    model = ScriptedModel(
        [
            call(
                "schedule_job",
                {"name": "q", "prompt": "quote of the day", "agent": "react", "cron": "0 9 * * *"},
                id="c1",
            ).model_copy(update={"usage": used}),
            ModelResponse(text="Scheduled.", usage=used),
        ]
    )  # a third model call (the fire's) would fail the test: the budget stops it first
    h, clock = await driven(
        make_harness,
        model,
        datetime(2026, 11, 26, 8, 0, tzinfo=UTC),
        admins=["boss"],
        budgets={"user": {"daily_tokens": 200}},
    )
    await h.say("@react every day at 9 a quote of the day")
    await clock.advance_to(datetime(2026, 11, 26, 9, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    await h.gateway.settled()
    # (tick() follows the runs it started too, so the two messages below may come in either order)
    assert any(t.startswith("⛔ You have used your daily model budget (240 of 200 tokens)") for t in h.channel.texts())
    await h.gateway.store.flush()
    await h.gateway.jobs.follow()
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert (
        f"⚠️ Job {job.id} (q) stopped: a model budget is used up (/usage); no more tries for this fire."
    ) in h.channel.texts()
    assert [s for _d, _a, s, _x in await h.gateway.jobs.jobs.fires(job.id)] == ["failed"]
    assert (await h.say("/jobs all"))[0] == "Only admins see every chat's jobs."
    [listing] = await h.say("/jobs all", user="boss")
    assert listing.startswith(f"{job.id} in {h.chat()}: q — at 09:00 every day, UTC (cron '0 9 * * *')")
    model.assert_complete()


async def test_admins_make_jobs_for_another_chat(make_harness: Any) -> None:
    model = ScriptedModel(
        [
            call(
                "schedule_job",
                {"name": "n", "message": "lunch!", "cron": "0 12 * * *", "chat": "console:team"},
                id="c1",
            ),
            "Made.",
            call("schedule_job", {"name": "x", "message": "hi", "cron": "0 12 * * *", "chat": "console:team"}, id="c2"),
            "Refused.",
        ]
    )
    h, clock = await driven(make_harness, model, datetime(2026, 11, 26, 9, 0, tzinfo=UTC), admins=["boss"])
    await h.say("@react every day at noon tell the team lunch!", user="boss", chat=h.chat("boss"))
    result = str(model.requests[1].messages[-1].tool_results[0].content)
    assert "in console:team: at 12:00 every day, UTC (cron '0 12 * * *')" in result
    await h.say("@react same for me", user="u1", chat=h.chat("u1"))
    assert "only admins make jobs for another chat" in str(model.requests[3].messages[-1].tool_results[0].content)
    await clock.advance_to(datetime(2026, 11, 26, 12, 0, 1, tzinfo=UTC))
    assert await h.gateway.jobs.tick() == 1
    assert h.channel.texts(h.chat("team"))[-1] == "⏰ lunch!"
    assert "n — at 12:00 every day" in (await h.say("/jobs", chat=h.chat("team")))[0]


async def test_down_for_a_month_a_frequent_job_is_caught_up_in_bounded_work(make_harness: Any) -> None:
    import time as timing

    model = ScriptedModel(
        [call("schedule_job", {"name": "ping", "message": "ping", "cron": "*/5 * * * *"}, id="c1"), "Ok."]
    )
    h, clock = await driven(make_harness, model, datetime(2026, 11, 1, 9, 1, tzinfo=UTC), jobs={"grace_s": 600})
    await h.say("@react every 5 minutes say ping")
    await clock.advance_to(datetime(2026, 12, 1, 9, 2, tzinfo=UTC))  # 30 days later: 8,640 fires missed
    started = timing.thread_time()  # CPU time: the catch-up's own work, whatever else the machine does
    assert await h.gateway.jobs.tick() == 1
    assert timing.thread_time() - started < 5
    assert h.channel.texts()[-1] == "⏰ ping\n(late: I was offline when this was due)", "09:00, 2 minutes late"
    [job] = await h.gateway.jobs.jobs.of_chat(str(h.chat()))
    assert job.next_fire_at == datetime(2026, 12, 1, 9, 5, tzinfo=UTC)
    [(_due, _attempt, status, detail)] = await h.gateway.jobs.jobs.fires(job.id)
    assert status == "done" and detail == "8639 earlier fire(s) missed", "counted exactly, a day at a time"
