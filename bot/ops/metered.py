"""Models that are measured (:class:`ObservedModel`: every call in the metrics) and that spend a budget
(:class:`BudgetedModel`: a run's calls checked and counted). Both answer exactly as the model they wrap."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents.messages import Message
from agents.models.base import Model, ModelError, ModelResponse, ToolDeclaration
from bot.ops.budgets import Budgets, Payer
from bot.ops.metrics import Metrics


class _Wrapper(Model):
    """Answers as ``inner``; subclasses act before a call (:meth:`_before`), after its response
    (:meth:`_after`) and when it fails (:meth:`_failed`)."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.understands = inner.understands
        self._streams = inner.streams
        """A model's kind decides it (a fallback chain's, its members'): asked once, not through every layer
        on every run."""

    @property
    def streams(self) -> bool:
        return self._streams

    def __getattr__(self, name: str) -> Any:
        # What a particular client offers beyond the interface (a scripted model's record of requests).
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def _before(self) -> None:
        return None

    async def _after(self, response: ModelResponse, started: float) -> None:
        return None

    def _failed(self, started: float) -> None:
        return None

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        await self._before()
        started = time.perf_counter()
        try:
            response = await self.inner.request(messages, tools=tools, system=system, response_schema=response_schema)
        except ModelError:
            self._failed(started)
            raise
        await self._after(response, started)
        return response

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolDeclaration] = (), system: str | None = None
    ) -> AsyncIterator[str | ModelResponse]:
        await self._before()
        started = time.perf_counter()
        try:
            async for part in self.inner.stream(messages, tools=tools, system=system):
                if isinstance(part, ModelResponse):
                    await self._after(part, started)
                yield part
        except ModelError:
            self._failed(started)
            raise

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        await self.inner.aclose()


class ObservedModel(_Wrapper):
    """Counts calls, latency, outcome and tokens of ``inner`` as ``provider``/its model name."""

    def __init__(self, inner: Model, metrics: Metrics, provider: str) -> None:
        super().__init__(inner)
        self.metrics = metrics
        self.provider = provider

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        # :meth:`_Wrapper.request` without its hooks' coroutines (on every model call of every message).
        started = time.perf_counter()
        try:
            response = await self.inner.request(messages, tools=tools, system=system, response_schema=response_schema)
        except ModelError:
            self._failed(started)
            raise
        self.metrics.model_call(self.provider, self.name, time.perf_counter() - started, response.usage)
        return response

    async def _after(self, response: ModelResponse, started: float) -> None:
        # A fallback chain answers as the model that answered; each member is observed on its own.
        self.metrics.model_call(self.provider, self.name, time.perf_counter() - started, response.usage)

    def _failed(self, started: float) -> None:
        self.metrics.model_call(self.provider, self.name, time.perf_counter() - started, None, error=True)


class BudgetedModel(_Wrapper):
    """``inner`` for one run: each call is checked against ``payer``'s budgets first and counted after."""

    def __init__(self, inner: Model, budgets: Budgets, payer: Payer) -> None:
        super().__init__(inner)
        self.budgets = budgets
        self.payer = payer

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        # :meth:`_Wrapper.request` without its hooks' coroutines, and no check's coroutine where nothing is
        # limited (on every model call of every message).
        if self.budgets.checks(self.payer):
            await self.budgets.check(self.payer)
        response = await self.inner.request(messages, tools=tools, system=system, response_schema=response_schema)
        self.budgets.count(self.payer, response, self.name)
        return response

    async def _before(self) -> None:
        await self.budgets.check(self.payer)

    async def _after(self, response: ModelResponse, started: float) -> None:
        self.budgets.count(self.payer, response, self.name)
