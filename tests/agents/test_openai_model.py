"""The OpenAI-compatible provider through the real ``openai`` client against a loopback fake."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from agents.messages import Media, Message, ToolCall, ToolResult
from agents.models.base import Generation, ModelError, ModelUnavailable, ToolDeclaration
from agents.models.fallback import FallbackModel
from agents.models.openai_compat import OpenAIModel
from agents.models.scripted import ScriptedModel
from bot.clock import FakeClock
from tests.fakes.openai_server import FakeOpenAI

TIME = ToolDeclaration(
    name="get_current_time",
    description="The time.",
    parameters={"type": "object", "properties": {"tz": {"type": "string"}}},
)
MCP = ToolDeclaration(name="mcp.github.search", description="Search.")


def model(server: FakeOpenAI, **kw: object) -> OpenAIModel:
    options: dict[str, object] = {"base_url": server.base_url, "backoff_base_s": 0.001, "backoff_max_s": 0.01}
    return OpenAIModel("gpt-test", str(kw.pop("api_key", "")), **{**options, **kw})  # type: ignore[arg-type]


async def test_text_tools_and_results_round_trip(openai_server: FakeOpenAI) -> None:
    openai_server.call("get_current_time", {"tz": "Asia/Tokyo"})
    openai_server.reply("It is 9 pm in Tokyo.", cached=4)
    m = model(openai_server, generation=Generation(temperature=0.2, max_output_tokens=300))
    first = await m.request([Message.user("time in Tokyo?")], tools=[TIME, MCP], system="Be brief.")
    [call] = first.tool_calls
    assert (call.name, call.args) == ("get_current_time", {"tz": "Asia/Tokyo"})
    result = ToolResult(call_id=call.id, name=call.name, content={"time": "21:00"})
    history = [Message.user("time in Tokyo?"), first.to_message(), Message.results([result])]
    second = await m.request(history, tools=[TIME, MCP], system="Be brief.")
    assert second.text == "It is 9 pm in Tokyo." and second.usage.cached_tokens == 4
    sent = openai_server.requests[1].body
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["messages"][2]["tool_calls"][0]["function"]["name"] == "get_current_time"
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": call.id, "content": '{"time": "21:00"}'}
    assert sent["temperature"] == 0.2 and sent["max_tokens"] == 300
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names[0] == "get_current_time" and names[1].startswith("mcp_github_search_"), "names OpenAI accepts"
    assert openai_server.requests[0].headers["Authorization"] == "Bearer no-key", "a key-less local endpoint"
    await m.aclose()


async def test_streamed_text_and_a_streamed_tool_call(openai_server: FakeOpenAI) -> None:
    openai_server.stream("It is ", "sunny.")
    openai_server.stream("Let me check.", call=("mcp.github.search", {"q": "bug"}))
    m = model(openai_server, api_key="sk-test")
    parts = [p async for p in m.stream([Message.user("weather?")])]
    assert parts[:2] == ["It is ", "sunny."] and parts[-1].text == "It is sunny."  # type: ignore[union-attr]
    assert parts[-1].usage.input_tokens == 12  # type: ignore[union-attr]
    parts = [p async for p in m.stream([Message.user("find the bug")], tools=[MCP])]
    final = parts[-1]
    assert not isinstance(final, str)
    assert final.tool_calls == (ToolCall(id="call_9", name="mcp.github.search", args={"q": "bug"}),)
    assert openai_server.requests[0].headers["Authorization"] == "Bearer sk-test"
    await m.aclose()


async def test_429_is_retried_after_retry_after_and_503s_end_unavailable(openai_server: FakeOpenAI) -> None:
    openai_server.fail(429, retry_after=0.05)
    openai_server.reply("Finally.")
    m = model(openai_server, max_retries=2)
    assert (await m.request([Message.user("hi")])).text == "Finally."
    for _ in range(3):
        openai_server.fail(503)
    with pytest.raises(ModelUnavailable, match=r"503\) after 3 attempts"):
        await m.request([Message.user("hi")])
    openai_server.fail(400)
    with pytest.raises(ModelError, match="rejected the request") as refused:
        await m.request([Message.user("hi")])
    assert not isinstance(refused.value, ModelUnavailable), "a bad request is not passed to a fallback"
    await m.aclose()


async def test_a_retry_waits_on_the_models_clock(openai_server: FakeOpenAI) -> None:
    openai_server.fail(429, retry_after=20)
    openai_server.reply("Finally.")
    clock = FakeClock()
    m = model(openai_server, clock=clock)
    answer = asyncio.ensure_future(m.request([Message.user("hi")]))
    await clock.armed()
    await clock.advance(19.9)
    assert not answer.done() and len(openai_server.requests) == 1, "not before the server's Retry-After"
    await clock.advance(0.1)
    assert (await answer).text == "Finally." and len(openai_server.requests) == 2
    await m.aclose()


async def test_an_image_goes_as_a_data_url_and_a_cut_answer_is_marked(
    openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(100)
    (tmp_path / "p.png").write_bytes(png)
    photo = Media(id="p", kind="image", mime_type="image/png", size=len(png), path=str(tmp_path / "p.png"))
    openai_server.reply("A tiny image, and then", finish="length")
    m = model(openai_server)
    answer = await m.request([Message.user("what is it?", media=(photo,))])
    assert answer.truncated
    image, text = openai_server.requests[0].body["messages"][0]["content"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()
    assert text == {"type": "text", "text": "what is it?"}
    await m.aclose()


async def test_a_fallback_answers_when_the_first_model_is_unavailable(openai_server: FakeOpenAI) -> None:
    openai_server.fail(503)
    backup = ScriptedModel(["From the backup."], name="backup")
    chain = FallbackModel([model(openai_server, max_retries=0), backup])
    answer = await chain.request([Message.user("hi")])
    assert answer.text == "From the backup." and len(answer.attempts) == 1
    assert answer.attempts[0].startswith("gpt-test: ") and "503" in answer.attempts[0]
    openai_server.fail(400)
    with pytest.raises(ModelError):
        await chain.request([Message.user("hi")])
    backup.assert_complete()
    await chain.aclose()
