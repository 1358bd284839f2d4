"""What a run returns: a final answer, or a request to pause for a human."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.context import RunContext
from agents.messages import Message
from agents.models.base import Usage
from agents.resolutions import Resolution

InterruptKind = Literal["ask_user", "plan_approval", "tool_confirm"]


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str
    value: str


class FinalAnswer(BaseModel):
    """The run finished; ``messages`` are the turns it added to the history."""

    text: str
    messages: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    agent: str = ""


class InterruptRequest(BaseModel):
    """The run needs a human before it can go on.

    ``state`` is the runner's own JSON, handed back on resume together with the
    resolution; the gateway stores it as the checkpoint.
    """

    kind: InterruptKind
    prompt: str
    choices: tuple[Choice, ...] = ()
    payload: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    agent: str = ""


class HandoffRequest(BaseModel):
    """The agent passes the conversation to ``target`` (a checked ``transfer_to_*`` call).

    ``messages`` are the turns the handing-off agent added (ending with the
    transfer call's result); ``message`` is the user message the run started from.
    """

    target: str
    reason: str
    summary: str = ""
    context: str = ""
    payload: Any = None
    message: Message
    messages: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    agent: str = ""


RunResult = FinalAnswer | InterruptRequest | HandoffRequest


@runtime_checkable
class Resumable(Protocol):
    """A runner that can continue a paused run from its state and the human's resolution (of the pause's kind).

    The agent loop resumes a paused run through this (:meth:`agents.loop.AgentLoop.resume`); a runner that
    never pauses need not be one."""

    async def resume(self, ctx: RunContext, state: dict[str, Any], resolution: Resolution) -> RunResult: ...


class Runner(Protocol):
    """Runs one agent turn: a final answer, or a request to pause."""

    name: str

    async def run(self, ctx: RunContext, message: Message) -> RunResult: ...
