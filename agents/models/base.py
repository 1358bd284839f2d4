"""The one interface every model client implements."""

from __future__ import annotations

import abc
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol

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
    """The prompt, all of it (cached and tool-use prompt tokens included)."""
    output_tokens: int = 0
    """The answer, thinking included."""
    cached_tokens: int = 0
    """Of the input, what the provider served from its cache (billed lower)."""
    tool_prompt_tokens: int = 0
    """Of the input, what the provider added for its own tools (Gemini's tool-use prompt)."""
    thinking_tokens: int = 0
    """Of the output, the model's thinking."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class ModelResponse(BaseModel):
    """What a model returned for one request: text and/or tool calls."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    parsed: Any = None
    """The decoded JSON object when a response schema was requested."""
    provider_meta: dict[str, Any] | None = None
    truncated: bool = False
    """The answer stopped at the output limit (``MAX_TOKENS``, ``length``): it is incomplete."""
    attempts: tuple[str, ...] = ()
    """Models that failed before this one answered (``model.fallbacks``), each with its error."""
    from_cache: bool = False
    """Answered from a recorded answer (an evaluation's response cache or cassette), not by the provider."""

    def as_step(self) -> dict[str, Any]:
        """The answer as a scripted model's step (``json``, ``calls`` or ``text``): what a trace keeps of it, so a
        recorded conversation can be played again with the same answers."""
        if self.parsed is not None:
            return {"json": self.parsed}
        if self.tool_calls:
            return {"calls": [{"name": c.name, "args": c.args} for c in self.tool_calls]}
        return {"text": self.text or ""}

    def to_message(self, *, agent: str | None = None) -> Message:
        return Message(
            role="assistant",
            text=self.text,
            tool_calls=self.tool_calls,
            agent=agent,
            provider_meta=self.provider_meta,
        )


class Generation(BaseModel):
    """How a model answers, per agent (``generation`` in its file) or per model entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(None, ge=0, le=2)
    max_output_tokens: int | None = Field(None, ge=1)
    thinking_budget: int | None = Field(None, ge=-1)
    """Gemini 2.5: tokens the model may think (0: none, -1: as it sees fit)."""
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    """Gemini 3: how hard it thinks (instead of a budget)."""

    def gemini(self) -> dict[str, Any]:
        """The ``GenerateContentConfig`` keys these set."""
        from google.genai import types

        out: dict[str, Any] = {}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            out["max_output_tokens"] = self.max_output_tokens
        if self.thinking_budget is not None or self.thinking_level is not None:
            level = types.ThinkingLevel(self.thinking_level.upper()) if self.thinking_level else None
            out["thinking_config"] = types.ThinkingConfig(thinking_budget=self.thinking_budget, thinking_level=level)
        return out


class ModelRequest(BaseModel):
    """The arguments of one :meth:`Model.request` call, as recorded by test models."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDeclaration, ...] = ()
    system: str | None = None
    response_schema: dict[str, Any] | None = None


def retry_delay(attempt: int, base_s: float, max_s: float, server_delay: float | None = None) -> float:
    """Exponential backoff with jitter (so many chats that hit one rate limit do not retry in lockstep),
    never shorter than what the server asked for (``Retry-After``)."""
    base = min(max_s, base_s * 2**attempt)
    return max(random.uniform(base / 2, base), server_delay or 0.0)


CUT_OFF = "\n\n⚠️ (This answer was cut off at the model's output limit.)"
"""Added to an answer that stopped at the output limit, so nobody takes it for complete."""


class ModelError(Exception):
    """A model call failed; the message is safe to show to a user."""


class ModelUnavailable(ModelError):
    """The provider could not answer (5xx, 429 after retries, the network): another provider may
    (``model.fallbacks``)."""


class ModelTimeout(ModelUnavailable):
    """The model did not answer within its timeout."""


class Model(abc.ABC):
    """A chat model: messages in, text and/or tool calls out."""

    name: str = "model"
    understands: bool = True
    """False for the offline stand-in: it cannot judge text, so routing trusts the rules over it."""

    @property
    def streams(self) -> bool:
        """Whether :meth:`stream` gives the text as it is written (a client of its own); False: it would give
        the whole answer in one piece, so :func:`complete` asks :meth:`request` instead (the same answer without
        a chain of async generators; see bench/README.md)."""
        return type(self).stream is not Model.stream

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

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One embedding vector per text (memory's semantic recall). Raises :class:`ModelError` when the
        provider or model does not embed."""
        raise ModelError(f"{self.name} does not make embeddings")

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
    if not model.streams:  # the whole answer at once, written as one piece (what its stream() would give)
        response = await model.request(messages, tools=tools, system=system)
        if response.text:
            await stream.write(response.text)
        if response.tool_calls:
            await stream.interrupt()
        return response
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
