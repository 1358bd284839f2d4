"""GeminiModel.stream through the real google-genai SDK against the fake server's SSE answers."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agents.messages import Message
from agents.models.base import ModelResponse
from tests.agents.conftest import MakeModel
from tests.fakes.gemini_server import FakeGemini, function_call_part, usage
from tests.helpers.gemini import WEATHER

pytestmark = [
    pytest.mark.timeout(20),
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]


def chunk(*parts: dict[str, Any], finish: str | None = None, tokens: tuple[int, int] | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    body: dict[str, Any] = {"candidates": [candidate]}
    if finish:
        candidate["finishReason"] = finish
    if tokens:
        body["usageMetadata"] = usage(*tokens)
    return body


async def test_text_comes_as_it_is_written_then_the_whole_response(
    gemini_server: FakeGemini, make_model: MakeModel
) -> None:
    gemini_server.stream(
        chunk({"text": "thinking about it", "thought": True}),
        chunk({"text": "Hel"}),
        chunk({"text": "lo, "}),
        chunk({"text": "world"}, finish="STOP", tokens=(12, 7)),
        gap_s=0.3,
    )
    began = time.monotonic()
    arrivals: list[tuple[float, str | ModelResponse]] = []
    async for part in make_model().stream([Message.user("hi")]):
        arrivals.append((time.monotonic() - began, part))
    deltas = [p for _, p in arrivals if isinstance(p, str)]
    assert deltas == ["Hel", "lo, ", "world"], "the thought summary is not part of the answer"
    assert arrivals[1][0] < arrivals[2][0] - 0.2, "each delta arrives when written, not at the end"
    final = arrivals[-1][1]
    assert isinstance(final, ModelResponse) and final.text == "Hello, world"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 7)
    assert gemini_server.requests[0].action == "streamGenerateContent"


async def test_a_function_call_in_the_stream_is_assembled(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.stream(
        chunk({"text": "Let me look. "}),
        chunk(function_call_part("get_weather", {"city": "Paris"}, id="c1"), finish="STOP", tokens=(5, 3)),
    )
    parts = [p async for p in make_model().stream([Message.user("weather?")], tools=[WEATHER])]
    final = parts[-1]
    assert parts[:-1] == ["Let me look. "]
    assert isinstance(final, ModelResponse) and final.text == "Let me look. "
    assert [(c.id, c.name, c.args) for c in final.tool_calls] == [("c1", "get_weather", {"city": "Paris"})]


async def test_a_refusal_before_the_stream_is_retried(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.fail(503)
    gemini_server.stream(chunk({"text": "ok"}, finish="STOP", tokens=(1, 1)))
    parts = [p async for p in make_model().stream([Message.user("hi")])]
    assert parts[0] == "ok" and isinstance(parts[-1], ModelResponse)
