"""Choosing models: an agent's own model, the main model's fallbacks (each failed attempt traced), and a
cut-off answer the user is told about, through the real gateway and the real model clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel
from bot.models import parse_spec
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI


def test_model_names() -> None:
    assert parse_spec("openai/gpt-4o-mini", "gemini") == ("openai", "gpt-4o-mini")
    assert parse_spec("openai/meta-llama/llama-3-8b", "gemini") == ("openai", "meta-llama/llama-3-8b")
    assert parse_spec("gemini-2.5-flash-lite", "gemini") == ("gemini", "gemini-2.5-flash-lite")
    assert parse_spec("meta-llama/llama-3-8b", "openai") == ("openai", "meta-llama/llama-3-8b")


async def test_an_agent_answers_with_the_model_its_file_names(
    make_harness: Any, openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "cheap.md").write_text(
        "---\nkind: agent\nname: cheap-helper\nrunner: chat\nmodel: openai/gpt-mini\n"
        "generation: {temperature: 0.1}\n---\nBe brief.\n"
    )
    openai_server.reply("Short answer.")
    main = ScriptedModel(["From the main model."])
    providers = {"openai": {"base_url": openai_server.base_url}}
    h = await make_harness(main, agents={"dirs": [str(agents)]}, model={"providers": providers})
    assert await h.say("@cheap-helper hello") == ["Short answer."]
    assert await h.say("@chat hello") == ["From the main model."]
    sent = openai_server.requests[0].body
    assert sent["model"] == "gpt-mini" and sent["temperature"] == 0.1
    main.assert_complete()


async def test_the_main_model_falls_back_and_the_failed_attempt_is_traced(
    make_harness: Any, gemini_server: FakeGemini, openai_server: FakeOpenAI
) -> None:
    gemini_server.fail(503)
    openai_server.reply("Answered by the fallback.")
    model = {
        "provider": "gemini",
        "name": "gemini-test",
        "max_retries": 0,
        "fallbacks": ["openai/gpt-fallback"],
        "providers": {
            "gemini": {"api_key": "AIza-test-key", "base_url": gemini_server.base_url},
            "openai": {"base_url": openai_server.base_url},
        },
    }
    h = await make_harness(None, model=model)
    assert await h.say("hello") == ["Answered by the fallback."]
    await h.gateway.tracing.flush()
    [run] = await h.gateway.tracing.runs(str(h.chat()))
    [call] = [e for e in run if e.type == "llm_call"]
    assert call.data["model"] == "fake-model" and "gemini-test" in call.data["failed_attempts"][0]


async def test_an_answer_cut_at_the_output_limit_says_so(make_harness: Any, openai_server: FakeOpenAI) -> None:
    openai_server.reply("The first half of a long", finish="length")
    model = {"provider": "openai", "name": "gpt-test", "base_url": openai_server.base_url}
    h = await make_harness(None, model=model, channels={"console": {"streaming": False}})
    [reply] = await h.say("write a long story")
    assert reply.startswith("The first half of a long") and "cut off at the model's output limit" in reply
