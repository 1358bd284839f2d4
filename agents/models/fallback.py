"""``model.fallbacks``: the next model answers when one is unavailable (5xx, 429 after its retries, a timeout,
the network); a request it refused (a 400, a blocked answer) is not passed on."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ModelUnavailable, ToolDeclaration

log = logging.getLogger(__name__)


class FallbackModel(Model):
    """Tries ``chain`` in order; the answer records which models failed before it (``attempts``)."""

    def __init__(self, chain: Sequence[Model]) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one model")
        self.chain = tuple(chain)
        self.name = chain[0].name
        self.understands = chain[0].understands

    @property
    def streams(self) -> bool:
        return any(model.streams for model in self.chain)

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(m.name for m in self.chain)})"

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        failed: list[str] = []
        for model in self.chain:
            try:
                response = await model.request(messages, tools=tools, system=system, response_schema=response_schema)
            except ModelUnavailable as exc:
                failed.append(self._failed(model, exc))
                continue
            return response.model_copy(update={"attempts": tuple(failed)}) if failed else response
        raise ModelUnavailable(self._none_answered(failed))

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
    ) -> AsyncIterator[str | ModelResponse]:
        failed: list[str] = []
        for model in self.chain:
            written = False
            try:
                async for part in model.stream(messages, tools=tools, system=system):
                    if isinstance(part, str):
                        written = True
                        yield part
                    else:
                        yield part.model_copy(update={"attempts": tuple(failed)}) if failed else part
                return
            except ModelUnavailable as exc:
                if written:  # part of an answer was shown: another model would start over
                    raise
                failed.append(self._failed(model, exc))
        raise ModelUnavailable(self._none_answered(failed))

    async def aclose(self) -> None:
        for model in self.chain:
            await model.aclose()

    @staticmethod
    def _failed(model: Model, exc: Exception) -> str:
        log.warning("model %s unavailable (%s); trying the next", model.name, exc)
        return f"{model.name}: {exc}"

    @staticmethod
    def _none_answered(failed: list[str]) -> str:
        return "No model could answer: " + "; ".join(failed)
