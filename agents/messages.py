"""The conversation history shared by every model client and runner.

Messages are plain pydantic models so a run's history serialises to JSON for
checkpoints and the store without an adapter per provider.  Provider metadata
that an API requires back on the next request (for example Gemini's thought
signatures) is kept opaque in ``provider_meta``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A function call requested by the model."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    provider_meta: dict[str, Any] | None = None


class ToolResult(BaseModel):
    """The single result that answers one :class:`ToolCall`."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    content: Any
    is_error: bool = False


class Message(BaseModel):
    """One turn of a conversation.

    ``user`` messages carry text; ``assistant`` messages text and/or tool calls;
    ``tool`` messages carry the results answering the previous assistant turn.
    """

    model_config = ConfigDict(frozen=True)

    role: Role
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    agent: str | None = None
    provider_meta: dict[str, Any] | None = None

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", text=text)

    @classmethod
    def assistant(cls, text: str, *, agent: str | None = None) -> Message:
        return cls(role="assistant", text=text, agent=agent)

    @classmethod
    def results(cls, results: list[ToolResult] | tuple[ToolResult, ...]) -> Message:
        return cls(role="tool", tool_results=tuple(results))

    def size(self) -> int:
        """Approximate size in characters, used for the context budget."""
        n = len(self.text or "")
        for call in self.tool_calls:
            n += len(call.name) + len(str(call.args))
        for result in self.tool_results:
            n += len(str(result.content))
        return n


def unanswered_calls(messages: list[Message] | tuple[Message, ...]) -> list[ToolCall]:
    """Tool calls in ``messages`` that have no result yet, in order."""
    answered = {r.call_id for m in messages for r in m.tool_results}
    return [c for m in messages for c in m.tool_calls if c.id not in answered]


def fit_context(messages: list[Message], max_chars: int) -> list[Message]:
    """The newest messages that fit in ``max_chars``, starting at a user turn.

    Cutting in the middle of a tool exchange would leave a result without its
    call (which providers reject), so the window always starts at a user message.
    The newest message is kept even when it alone exceeds the budget.
    """
    total = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        total += messages[i].size()
        if total > max_chars and start < len(messages):
            break
        start = i
    while start < len(messages) and messages[start].role != "user":
        start += 1
    return messages[start:]
