"""The Chat subagent: one model call over the session history."""

from __future__ import annotations

from agents.context import RunContext
from agents.messages import Message
from agents.models.base import CUT_OFF, complete
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
        ctx.model_called(self.name, response, started)
        text = (response.text or "") + (CUT_OFF if response.truncated else "")
        reply = Message.assistant(text, agent=self.name)
        return FinalAnswer(text=text, messages=(reply,), usage=response.usage, agent=self.name)
