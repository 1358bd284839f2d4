"""The one interface every model client implements."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.messages import Message, ToolCall


class ToolDeclaration(BaseModel):
    """A function the model may call, described by a JSON schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ModelResponse(BaseModel):
    """What a model returned for one request: text and/or tool calls."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    parsed: Any = None
    """The decoded JSON object when a response schema was requested."""
    provider_meta: dict[str, Any] | None = None

    def to_message(self, *, agent: str | None = None) -> Message:
        return Message(
            role="assistant",
            text=self.text,
            tool_calls=self.tool_calls,
            agent=agent,
            provider_meta=self.provider_meta,
        )


class ModelRequest(BaseModel):
    """The arguments of one :meth:`Model.request` call, as recorded by test models."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDeclaration, ...] = ()
    system: str | None = None
    response_schema: dict[str, Any] | None = None


class ModelError(Exception):
    """A model call failed; the message is safe to show to a user."""


class ModelTimeout(ModelError):
    """The model did not answer within its timeout."""


class Model(abc.ABC):
    """A chat model: messages in, text and/or tool calls out."""

    name: str = "model"
    understands: bool = True
    """False for the offline stand-in: it cannot judge text, so routing trusts the rules over it."""

    @abc.abstractmethod
    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        """Send one request. Raises :class:`ModelError` on failure."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network resources."""
