"""The one interface every model client implements."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

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

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
    ) -> AsyncIterator[str | ModelResponse]:
        """:meth:`request`, answered as it is written: text deltas (``str``), then the whole response once.

        The response is complete (its text is every delta joined, its tool calls assembled).  A client that
        cannot stream answers with one delta; raises :class:`ModelError` like :meth:`request`.
        """
        response = await self.request(messages, tools=tools, system=system)
        if response.text:
            yield response.text
        yield response

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network resources."""


class AnswerStream(Protocol):
    """Where a runner's answer goes while the model writes it (the gateway shows it growing)."""

    async def write(self, delta: str) -> None:
        """More of the answer."""

    async def interrupt(self) -> None:
        """What was written is not the final answer (a tool call or a pause follows): end it as it is."""


async def complete(
    model: Model,
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolDeclaration] = (),
    system: str | None = None,
    stream: AnswerStream | None = None,
) -> ModelResponse:
    """One model call; with ``stream``, its text is written there as it comes (and interrupted when the
    response turns out to call tools)."""
    if stream is None:
        return await model.request(messages, tools=tools, system=system)
    final: ModelResponse | None = None
    async for part in model.stream(messages, tools=tools, system=system):
        if isinstance(part, str):
            if part:
                await stream.write(part)
        else:
            final = part
    if final is None:
        raise ModelError(f"{model.name}: the stream ended without a response")
    if final.tool_calls:
        await stream.interrupt()
    return final
