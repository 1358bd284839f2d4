"""The ``schedule_job`` tool: agents make recurring jobs ("every weekday at 8 remind me…", "every Monday
summarise…") in the chat they answer, for the person who asked."""

from __future__ import annotations

from agents.tools.base import Tool, ToolContext, ToolError, tool
from bot.events import ChatKey
from bot.jobs.service import JobError, JobService


def job_tools(service: JobService) -> list[Tool]:
    @tool(risk="low")
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
    ) -> str:
        """Make a recurring (or one-time) job in this chat. Give exactly one action: `message` (sent as it is)
        or `prompt` (run by an agent each time, with its tools: `agent` names it, e.g. "react"; else routed).
        Give exactly one trigger: `cron` (minute hour day month weekday, e.g. "0 8 * * mon-fri" = weekdays
        08:00), `every_minutes`, or `at` (ISO time, e.g. "2026-12-01T09:00"). Times are in the chat's time
        zone unless `timezone` (IANA, e.g. "Europe/Berlin") is given."""
        if (message is None) == (prompt is None):
            raise ToolError("give exactly one of message (sent as is) or prompt (run by an agent)")
        chat = ChatKey.parse(ctx.chat_key)
        try:
            job = await service.create(
                chat,
                f"{chat.channel}:{ctx.user_id}",
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
        return f"job {job.id} ({job.name}): {job.trigger.describe()}; next at {service.when(job)}"

    return [schedule_job]
