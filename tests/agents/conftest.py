"""Fixtures of the agent tests: a GeminiModel on the fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agents.models.gemini import GeminiModel
from tests.fakes.gemini_server import FakeGemini

KEY = "AIza-test-key-0123456789-secret"

MakeModel = Callable[..., GeminiModel]


@pytest.fixture
async def make_model(gemini_server: FakeGemini) -> AsyncIterator[MakeModel]:
    models: list[GeminiModel] = []

    def make(**kw: Any) -> GeminiModel:
        options: dict[str, Any] = {
            "base_url": gemini_server.base_url,
            "timeout_s": 2.0,
            "max_retries": 2,
            "backoff_base_s": 0.001,
            "backoff_max_s": 0.01,
        }
        model = GeminiModel(kw.pop("model", "gemini-test"), kw.pop("api_key", KEY), **{**options, **kw})
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()
