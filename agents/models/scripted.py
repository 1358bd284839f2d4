"""A scripted model for tests: a queue of steps, every call recorded.

Each step is a :class:`ModelResponse`, a string (a text answer), an exception
to raise, or a function of the :class:`ModelRequest` returning either.  A call
with no step left, or a step left at the end, fails the test through
:meth:`ScriptedModel.assert_complete` (the test fixtures call it on teardown).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from agents.clock import SYSTEM_CLOCK, Clock
from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelRequest, ModelResponse, ToolDeclaration


@dataclass(frozen=True)
class Streamed:
    """A step answered in pieces: ``chunks`` of text, ``delay_s`` apart, then ``tool_calls`` (if any)."""

    chunks: tuple[str, ...]
    delay_s: float = 0.0
    tool_calls: tuple[ToolCall, ...] = ()
    gate: Callable[[int], Awaitable[None]] | None = None
    """Awaited before chunk ``k`` (from the second on), after ``delay_s``: a test lets the next piece come once
    what it waits for happened (the text so far is on the screen), instead of racing the clock."""

    def response(self, model: str) -> ModelResponse:
        return ModelResponse(text="".join(self.chunks) or None, tool_calls=self.tool_calls, model=model)


StepFn = Callable[[ModelRequest], Union[ModelResponse, str, Awaitable[ModelResponse | str]]]
Step = Union[ModelResponse, str, Streamed, BaseException, StepFn]


class ScriptError(AssertionError):
    """The script and the calls made disagree."""


def call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> ModelResponse:
    """A response holding one tool call (a convenience for scripts)."""
    return calls((name, args or {}, id))


def calls(*specs: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str | None]) -> ModelResponse:
    """A response holding several tool calls of one model turn."""
    out = []
    for i, spec in enumerate(specs):
        name, args = spec[0], spec[1]
        cid = spec[2] if len(spec) > 2 else None
        out.append(ToolCall(id=cid or f"call-{name}-{i}", name=name, args=args))
    return ModelResponse(tool_calls=tuple(out))


class ScriptedModel(Model):
    """Replays a script of steps and records every request."""

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted", clock: Clock = SYSTEM_CLOCK) -> None:
        """``clock``: what a :class:`Streamed` step's ``delay_s`` waits on (a test's ``FakeClock`` moves it)."""
        self.name = name
        self.clock = clock
        self._steps: deque[Step] = deque(steps)
        self.requests: list[ModelRequest] = []
        self.errors: list[str] = []

    def add(self, *steps: Step) -> None:
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        req = ModelRequest(messages=tuple(messages), tools=tuple(tools), system=system, response_schema=response_schema)
        self.requests.append(req)
        if not self._steps:
            last = messages[-1].text if messages else None
            msg = f"{self.name}: model called with no scripted step left (last message: {last!r})"
            self.errors.append(msg)
            raise ScriptError(msg)
        step = self._steps.popleft()
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, ModelResponse):
            out = step(req)
            if inspect.isawaitable(out):
                out = await out
            step = out
        if isinstance(step, str):
            return ModelResponse(text=step, model=self.name)
        if isinstance(step, Streamed):
            return step.response(self.name)
        assert isinstance(step, ModelResponse), f"bad scripted step {step!r}"
        return step.model_copy(update={"model": step.model or self.name})

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
    ) -> AsyncIterator[str | ModelResponse]:
        step = self._steps[0] if self._steps else None
        if not isinstance(step, Streamed):
            async for part in super().stream(messages, tools=tools, system=system):
                yield part
            return
        response = await self.request(messages, tools=tools, system=system)  # records it, takes the step
        for k, chunk in enumerate(step.chunks):
            if k and step.delay_s:
                await self.clock.sleep(step.delay_s)
            if k and step.gate is not None:
                await step.gate(k)
            yield chunk
        yield response

    def assert_complete(self) -> None:
        """Fail when a call found no step, or a step was never used."""
        if self.errors:
            raise ScriptError("; ".join(self.errors))
        if self._steps:
            raise ScriptError(f"{self.name}: {len(self._steps)} scripted step(s) never used: {list(self._steps)!r}")
