"""The Chat subagent: one model call over the session history."""

from __future__ import annotations

from agents.context import RunContext
from agents.messages import Message
from agents.models.base import complete
from agents.results import FinalAnswer, RunResult

DEFAULT_PROMPT = (
    "You are a helpful assistant in a group or direct chat. Answer briefly and clearly, "
    "in the language the user writes in."
)


class ChatRunner:
    """Answers from the conversation alone, without tools."""

    def __init__(self, name: str = "chat", system_prompt: str = DEFAULT_PROMPT) -> None:
        self.name = name
        self.system_prompt = system_prompt

    async def run(self, ctx: RunContext, message: Message) -> RunResult:
        started = ctx.clock()
        response = await complete(
            ctx.model, [*ctx.history, message], system=ctx.system(self.system_prompt), stream=ctx.stream
        )
        ctx.tracer.event(
            "llm_call",
            agent=self.name,
            model=response.model or ctx.model.name,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            duration_ms=round((ctx.clock() - started) * 1000, 3),
        )
        text = response.text or ""
        reply = Message.assistant(text, agent=self.name)
        return FinalAnswer(text=text, messages=(reply,), usage=response.usage, agent=self.name)
