"""The LLM router: the model picks an agent by calling one ``transfer_to_<name>`` tool.

Each tool's description is the agent's title and description, then up to :data:`EXAMPLES_SHOWN` of its sample
requests (its ``examples:`` and the corrections admins made, newest corrections first): the model sees what each
agent is for the way the offline router does."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.messages import Message
from agents.models.base import Model, ModelError, ToolDeclaration
from bot.routing.rule import RouteTarget

if TYPE_CHECKING:
    from bot.routing.offline import Correction

log = logging.getLogger(__name__)

PREFIX = "transfer_to_"
EXAMPLES_SHOWN = 8
"""Sample requests per agent in its tool's description (the prompt stays small with 40 agents)."""
SYSTEM = (
    "You are the router of a chat bot. Read the user's message and hand it to the one agent best suited to "
    "answer it, by calling exactly one transfer_to_<agent> function. Do not answer the message yourself."
)


def transfer_tool_name(agent: str) -> str:
    return PREFIX + agent.replace("-", "_")


@dataclass
class LlmDecision:
    agent: str | None
    error: str | None
    latency_us: float
    call: dict[str, Any] | None = None
    """The model call made, as traces record it: ``model`` and its token counts (None: no answer came)."""


class LlmRouter:
    """Asks a model to choose among the routable agents."""

    def __init__(
        self,
        model: Model,
        targets: Sequence[RouteTarget],
        timeout_s: float = 5.0,
        corrections: Sequence[Correction] = (),
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        learned: dict[str, list[str]] = {}
        for c in reversed(corrections):
            learned.setdefault(c.agent, []).append(c.text)
        self.tools = [
            ToolDeclaration(
                name=transfer_tool_name(t.name),
                description=describe(t, learned.get(t.name, ())),
                parameters={
                    "type": "object",
                    "properties": {"reason": {"type": "string", "description": "Why this agent fits, briefly."}},
                },
            )
            for t in targets
        ]
        self._by_tool = {transfer_tool_name(t.name): t.name for t in targets}

    async def route(self, text: str) -> LlmDecision:
        started = time.perf_counter()

        call: dict[str, Any] | None = None

        def done(agent: str | None, error: str | None) -> LlmDecision:
            return LlmDecision(agent, error, (time.perf_counter() - started) * 1e6, call)

        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.model.request([Message.user(text)], tools=self.tools, system=SYSTEM)
        except TimeoutError:
            return done(None, f"the router model did not answer within {self.timeout_s:g} s")
        except ModelError as exc:
            return done(None, f"the router model failed: {exc}")
        usage = response.usage
        call = {"model": response.model or self.model.name, "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens, "cached_tokens": usage.cached_tokens}  # fmt: skip
        call["answer"] = response.as_step()  # what the model chose, so a replay from traces asks the same
        if response.from_cache:  # an evaluation's recorded answer: no call reached the provider
            call["from_cache"] = True
        names = [c.name for c in response.tool_calls]
        if len(names) != 1:
            return done(None, f"the router model made {len(names)} transfer calls instead of one")
        agent = self._by_tool.get(names[0])
        if agent is None:
            return done(None, f"the router model called an unknown function {names[0]!r}")
        return done(agent, None)


def describe(target: RouteTarget, learned: Sequence[str] = ()) -> str:
    """The tool description of ``target``: title, description and sample requests."""
    about = f"{target.title or target.name}: {target.description}".strip(": ")
    samples = [*learned, *target.examples][:EXAMPLES_SHOWN]
    if samples:
        about += " Requests it takes, for example: " + " | ".join(s.replace("\n", " ")[:160] for s in samples)
    return about
