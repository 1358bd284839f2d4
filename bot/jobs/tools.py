"""The ``schedule_job`` tool: agents make recurring jobs ("every weekday at 8 remind me…", "every Monday
summarise…") in the chat they answer, for the person who asked."""

from __future__ import annotations

from collections.abc import Callable

from agents.tools.base import Tool, ToolContext, ToolError, tool
from bot.events import ChatKey
from bot.jobs.service import JobError, JobService

SCHEDULE_JOB = "schedule_job"
TOOL_NAMES = (SCHEDULE_JOB,)
"""The gateway tools this module makes (:func:`bot.runs.tool_names.known_tool_names` reads them)."""


def job_tools(service: JobService, is_admin: Callable[[str], bool]) -> list[Tool]:
    """``is_admin``: whether an account (``channel:user_id``) may make jobs for other chats."""

    @tool(risk="low", name=SCHEDULE_JOB)
    async def schedule_job(
        ctx: ToolContext,
        name: str,
        message: str | None = None,
        prompt: str | None = None,
        agent: str | None = None,
        cron: str | None = None,
        every_minutes: float | None = None,
        at: str | None = None,
        timezone: str | None = None,
        chat: str | None = None,
    ) -> str:
        """Make a recurring (or one-time) job in this chat. Give exactly one action: `message` (sent as it is)
        or `prompt` (run by an agent each time, with its tools: `agent` names it, e.g. "react"; else routed).
        Give exactly one trigger: `cron`, `every_minutes`, or `at` (ISO time, e.g. "2026-12-01T09:00").
        `cron` is standard crontab: minute hour day-of-month month day-of-week; weekdays count from Sunday (0 and 7
        are Sunday, 1-5 is Monday to Friday) or are names (mon-fri); ranges, lists and steps (*/15); when both day
        fields are set a day matching either fires ("0 9 1 * mon": the 1st and every Monday); @hourly, @daily,
        @weekly, @monthly, @yearly. E.g. "0 8 * * 1-5" = weekdays at 08:00, "30 18 * * 0" = Sundays at 18:30.
        Times are in the chat's time zone unless `timezone` (IANA, e.g. "Europe/Berlin") is given. Across clock
        changes: a local time that exists fires at that time; one the clocks skip fires once, at the first moment
        after the gap; one they pass twice fires once (both times if the job runs every hour). `chat`
        (channel:chat_id, admins only) makes the job for another chat; it runs there. The result says what the
        schedule means in words and its next 3 fires: check them against what was asked."""
        if (message is None) == (prompt is None):
            raise ToolError("give exactly one of message (sent as is) or prompt (run by an agent)")
        here = ChatKey.parse(ctx.chat_key)
        owner = f"{here.channel}:{ctx.user_id}"
        target = here
        if chat:
            try:
                target = ChatKey.parse(chat.strip())
            except ValueError as exc:
                raise ToolError(str(exc)) from None
            if target != here and not is_admin(owner):
                raise ToolError("only admins make jobs for another chat; this one is made here without `chat`")
        try:
            job = await service.create(
                target,
                owner,
                name=name,
                action="prompt" if prompt is not None else "message",
                text=prompt if prompt is not None else message or "",
                agent=agent.lstrip("@") if agent else None,
                cron=cron,
                every_minutes=every_minutes,
                at=at,
                timezone=timezone,
            )
        except JobError as exc:
            raise ToolError(str(exc)) from None
        where = f" in {target}" if target != here else ""
        kept = "" if job.text == (prompt or message or "").strip() else f"; a secret is not kept, it reads: {job.text}"
        return f"job {job.id} ({job.name}){where}: {job.trigger.describe()}; next at {service.upcoming(job)}{kept}"

    return [schedule_job]
