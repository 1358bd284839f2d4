"""The Chat subagent: one model call over the session history.

Given tools (the gateway offers a chat agent only its memory tools: ``remember``, ``recall``...), it answers
as a short ReAct loop over them, so "remember that I am vegetarian" works in plain conversation.
"""

from __future__ import annotations

from typing import Any

from agents.context import RunContext
from agents.messages import Message
from agents.models.base import CUT_OFF, complete
from agents.react import ReactRunner
from agents.resolutions import Resolution
from agents.results import FinalAnswer, Resumable, RunResult

DEFAULT_PROMPT = (
    "You are a helpful assistant in a group or direct chat. Answer briefly and clearly, "
    "in the language the user writes in."
)


class ChatRunner(Resumable):
    """Answers from the conversation alone, without tools."""

    MAX_TOOL_ROUNDS = 4

    def __init__(self, name: str = "chat", system_prompt: str = DEFAULT_PROMPT) -> None:
        self.name = name
        self.system_prompt = system_prompt

    def _with_tools(self) -> ReactRunner:
        return ReactRunner(self.name, self.system_prompt, max_iterations=self.MAX_TOOL_ROUNDS)

    async def resume(self, ctx: RunContext, state: dict[str, Any], resolution: Resolution) -> RunResult:
        """Only a run that used tools pauses (a tool the operator made confirmable); it resumes as one."""
        return await self._with_tools().resume(ctx, state, resolution)

    async def run(self, ctx: RunContext, message: Message) -> RunResult:
        if ctx.tools:
            return await self._with_tools().run(ctx, message)
        started = ctx.clock()
        response = await complete(
            ctx.model, [*ctx.history, message], system=ctx.system(self.system_prompt), stream=ctx.stream
        )
        ctx.model_called(self.name, response, started)
        text = (response.text or "") + (CUT_OFF if response.truncated else "")
        reply = Message.assistant(text, agent=self.name)
        return FinalAnswer(text=text, messages=(reply,), usage=response.usage, agent=self.name)
