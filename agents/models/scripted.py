"""A scripted model for tests: a queue of steps, every call recorded.

Each step is a :class:`ModelResponse`, a string (a text answer), an exception
to raise, or a function of the :class:`ModelRequest` returning either.  A call
with no step left, or a step left at the end, fails the test through
:meth:`ScriptedModel.assert_complete` (the test fixtures call it on teardown).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Union

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelRequest, ModelResponse, ToolDeclaration

StepFn = Callable[[ModelRequest], Union[ModelResponse, str, Awaitable[ModelResponse | str]]]
Step = Union[ModelResponse, str, BaseException, StepFn]


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

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self.name = name
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
        assert isinstance(step, ModelResponse), f"bad scripted step {step!r}"
        return step.model_copy(update={"model": step.model or self.name})

    def assert_complete(self) -> None:
        """Fail when a call found no step, or a step was never used."""
        if self.errors:
            raise ScriptError("; ".join(self.errors))
        if self._steps:
            raise ScriptError(f"{self.name}: {len(self._steps)} scripted step(s) never used: {list(self._steps)!r}")
