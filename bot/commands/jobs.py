"""``/jobs`` (this chat's recurring jobs with their next fires; pause, resume, delete; admins: all of them)
and ``/timezone`` (the chat's time zone for cron expressions and times)."""

from __future__ import annotations

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.jobs.service import Job, JobService
from bot.jobs.triggers import TriggerError, zone

JOBS_USAGE = "Usage: /jobs | /jobs pause|resume|delete ID | admins: /jobs all"
ZONE_USAGE = "Usage: /timezone | /timezone Europe/Berlin | /timezone reset"
SETTING = "timezone"


def register_job_commands(ctx: CommandContext, service: JobService | None) -> None:
    if service is None:
        return

    async def jobs(call: CommandCall) -> str:
        args = call.argv
        event = call.event
        if not args:
            listed = await service.jobs.of_chat(str(event.chat))
            return _listing(
                service, listed, "No jobs in this chat (ask me: \u201cevery weekday at 8 remind me…\u201d)."
            )
        if args == ["all"]:
            if not event.sender.is_admin:
                return "Only admins see every chat's jobs."
            return _listing(service, await service.jobs.live(), "No jobs anywhere.", chats=True)
        if len(args) == 2 and args[0] in ("pause", "resume", "delete"):
            return await _change(service, call, args[0], args[1])
        return JOBS_USAGE

    async def timezone(call: CommandCall) -> str:
        chat = call.event.chat
        args = call.argv
        current = (await ctx.store.chat_settings(chat.settings_key)).get(SETTING)
        if not args:
            shown = current or f"{ctx.settings.jobs.timezone} (the default, jobs.timezone)"
            return f"This chat's time zone: {shown}."
        if len(args) != 1:
            return ZONE_USAGE
        if not call.event.is_direct and not call.event.sender.is_admin:
            return "In a group only admins set the time zone (it applies to everyone's jobs here)."
        value = None if args[0].lower() == "reset" else args[0]
        if value is not None:
            try:
                zone(value)
            except TriggerError as exc:
                return f"{exc}."
        await ctx.audit(f"{chat.channel}:{call.event.sender.id}", chat.settings_key, SETTING, current, value)
        if value is None:
            return f"Time zone reset to {ctx.settings.jobs.timezone} (jobs.timezone)."
        return f"Time zone set to {value}: new jobs' times are read there (existing jobs keep theirs)."

    ctx.commands.add(
        "jobs", jobs, "recurring jobs here and their next runs; pause, resume, delete", usage="[pause|resume|delete ID]"
    )
    ctx.commands.add("timezone", timezone, "this chat's time zone for jobs", usage="[ZONE|reset]")


def _listing(service: JobService, jobs: list[Job], empty: str, *, chats: bool = False) -> str:
    if not jobs:
        return empty
    lines = []
    for job in jobs:
        what = (
            f"message: {job.text}"
            if job.action in ("message", "notice")
            else f"{'@' + job.agent + ' ' if job.agent else ''}{job.text}"
        )
        state = "paused" if job.status == "paused" else f"next {service.when(job)}"
        where = f" in {job.chat_key}" if chats else ""
        lines.append(f"{job.id}{where}: {job.name} — {job.trigger.describe()}; {state}\n    {what[:120]}")
    return "\n".join(lines)


async def _change(service: JobService, call: CommandCall, verb: str, job_id: str) -> str:
    job = await service.jobs.get(job_id)
    event = call.event
    if (
        job is None
        or job.status in ("deleted", "done")
        or (job.chat_key != str(event.chat) and not event.sender.is_admin)
    ):
        return f"No job {job_id} here (/jobs lists them)."
    if job.owner != f"{event.chat.channel}:{event.sender.id}" and not event.sender.is_admin:
        return f"Job {job_id} is {job.owner}'s: only they or an admin may change it."
    if verb == "pause":
        ok = await service.jobs.set_status(job.id, "paused", was=("active",))
        return f"Job {job.id} paused." if ok else f"Job {job.id} is not running."
    if verb == "resume":
        following = job.trigger.next_after(job.last_fire_at, service.now())
        if following is None:
            return f"Job {job.id} has no further fire; delete it."
        ok = await service.jobs.set_status(job.id, "active", was=("paused",), next_fire=following)
        service.wake()
        return (
            f"Job {job.id} resumed; next at {service.when(await service.jobs.get(job.id) or job)}."
            if ok
            else f"Job {job.id} is not paused."
        )
    ok = await service.jobs.set_status(job.id, "deleted", was=("active", "paused"))
    return f"Job {job.id} deleted." if ok else f"Job {job.id} is already gone."
