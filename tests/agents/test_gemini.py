"""GeminiModel through the real google-genai SDK against a fake Gemini server."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import traceback
from typing import Any

import pytest

from agents.messages import Message, ToolCall, ToolResult
from agents.models.base import ModelError, ModelTimeout, ToolDeclaration
from agents.models.gemini import GeminiModel
from agents.models.gemini_schema import gemini_tool_name, sanitize_schema
from bot.clock import FakeClock
from tests.agents.conftest import KEY, MakeModel
from tests.fakes.gemini_server import FakeGemini, call_body, candidate_body, function_call_part, text_body
from tests.helpers.gemini import WEATHER

pytestmark = [
    pytest.mark.timeout(20),
    # google-genai 3.4 subclasses aiohttp.ClientSession, which aiohttp 3.14 warns about.
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")

_KEYWORDS = {"any_of": "anyOf", "min_items": "minItems", "max_items": "maxItems", "min_length": "minLength"}
_KEYWORDS |= {"max_length": "maxLength", "property_ordering": "propertyOrdering"}


def norm(schema: Any) -> Any:
    """A schema as received, with the SDK's snake_case keywords in Gemini's camelCase (names untouched)."""
    if isinstance(schema, list):
        return [norm(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        key = _KEYWORDS.get(key, key)
        out[key] = {n: norm(s) for n, s in value.items()} if key == "properties" else norm(value)
    return out


def declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for tool in body.get("tools", []) for d in tool["functionDeclarations"]]


def roundtrip(history: list[Message]) -> list[Message]:
    """The history as a checkpoint would store and restore it."""
    return [Message.model_validate(m) for m in json.loads(json.dumps([m.model_dump(mode="json") for m in history]))]


async def test_text_answer(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.reply(text_body("Hello there", prompt_tokens=12, output_tokens=3))
    model = make_model()
    response = await model.request([Message.user("hi")], system="Be brief.")
    assert response.text == "Hello there" and response.tool_calls == ()
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.model == "gemini-test" and response.parsed is None
    [req] = gemini_server.requests
    assert req.path == "/v1beta/models/gemini-test:generateContent"
    assert req.headers["x-goog-api-key"] == KEY
    assert req.body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert req.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert "tools" not in req.body


async def test_function_call_is_parsed(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.reply(call_body(function_call_part("get_weather", {"city": "Paris"}, id="call-1")))
    no_args = ToolDeclaration(name="get_time", description="Current time")
    response = await make_model().request([Message.user("weather?")], tools=[WEATHER, no_args])
    assert response.text is None
    assert response.tool_calls == (ToolCall(id="call-1", name="get_weather", args={"city": "Paris"}),)
    decls = declarations(gemini_server.requests[0].body)
    assert [d["name"] for d in decls] == ["get_weather", "get_time"]
    assert norm(decls[0]["parameters"]) == {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}},
        "required": ["city"],
    }
    assert "parameters" not in decls[1]  # Gemini rejects an empty OBJECT


async def test_two_turns_echo_call_id_and_thought_signature(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    sig = b"\xfa\xfb\xfc opaque signature \xff"
    gemini_server.reply(call_body(function_call_part("get_weather", {"city": "Oslo"}, id="c-7", thought_signature=sig)))
    gemini_server.reply(text_body("It is 3 degrees in Oslo."))
    model = make_model()
    history = [Message.user("weather in Oslo?")]
    first = await model.request(history, tools=[WEATHER])
    call = first.tool_calls[0]
    assert call.provider_meta == {"gemini": {"thought_signature": base64.b64encode(sig).decode()}}
    history += [first.to_message(), Message.results([ToolResult(call_id=call.id, name=call.name, content="3°C")])]
    second = await model.request(roundtrip(history), tools=[WEATHER])
    assert second.text == "It is 3 degrees in Oslo."

    user, model_turn, results = gemini_server.requests[1].body["contents"]
    assert user == {"role": "user", "parts": [{"text": "weather in Oslo?"}]}
    [part] = model_turn["parts"]
    assert model_turn["role"] == "model"
    assert part["functionCall"] == {"id": "c-7", "name": "get_weather", "args": {"city": "Oslo"}}
    # The SDK re-encodes bytes as URL-safe base64; the API accepts both alphabets.
    assert base64.urlsafe_b64decode(part["thoughtSignature"]) == sig
    assert results == {
        "role": "user",
        "parts": [{"functionResponse": {"id": "c-7", "name": "get_weather", "response": {"result": "3°C"}}}],
    }


async def test_parallel_results_follow_call_order(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.reply_text("done")
    calls = (ToolCall(id="a", name="get_weather", args={"city": "A"}), ToolCall(id="b", name="get_time"))
    history = [
        Message.user("both"),
        Message(role="assistant", text="Checking.", tool_calls=calls),
        Message.results(
            [
                ToolResult(call_id="b", name="get_time", content="boom", is_error=True),
                ToolResult(call_id="a", name="get_weather", content={"temp": 3}),
            ]
        ),
        Message.user("and?"),
    ]
    await make_model().request(history, tools=[WEATHER, ToolDeclaration(name="get_time")])
    contents = gemini_server.requests[0].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][0] == {"text": "Checking."}
    responses = [p["functionResponse"] for p in contents[2]["parts"][:2]]
    assert [(r["id"], r["response"]) for r in responses] == [("a", {"temp": 3}), ("b", {"error": "boom"})]
    assert contents[2]["parts"][2] == {"text": "and?"}


@pytest.mark.parametrize("status", [429, 500])
async def test_retry_then_success(gemini_server: FakeGemini, make_model: MakeModel, status: int) -> None:
    gemini_server.fail(status)
    gemini_server.reply_text("ok")
    response = await make_model().request([Message.user("hi")])
    assert response.text == "ok"
    first, second = gemini_server.requests
    assert first.body == second.body


async def test_retry_honours_retry_delay(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.3s"}
    gemini_server.fail(429, "quota", details=[retry_info])
    gemini_server.fail(503, headers={"Retry-After": "0.2"})
    gemini_server.reply_text("ok")
    clock = FakeClock()
    answer = asyncio.ensure_future(make_model(clock=clock).request([Message.user("hi")]))
    for wait in (0.3, 0.2):  # each retry waits on the model's clock as long as the server asked, no less
        await clock.armed()
        tried = len(gemini_server.requests)
        await clock.advance(wait - 0.01)
        assert not answer.done() and len(gemini_server.requests) == tried
        await clock.advance(0.01)
    assert (await answer).text == "ok" and len(gemini_server.requests) == 3


async def test_retry_after_too_long_gives_up(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.fail(429, headers={"Retry-After": "120"})
    with pytest.raises(ModelError, match="retry in 120 s"):
        await make_model().request([Message.user("hi")])
    assert len(gemini_server.requests) == 1


async def test_retries_exhausted(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    for _ in range(3):
        gemini_server.fail(503)
    with pytest.raises(ModelError, match=r"unavailable \(503 UNAVAILABLE\) after 3 attempts") as info:
        await make_model(max_retries=2).request([Message.user("hi")])
    assert not isinstance(info.value, ModelTimeout)
    assert len(gemini_server.requests) == 3


async def test_client_errors_are_not_retried(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.fail(400, "Invalid JSON payload received.")
    with pytest.raises(ModelError, match=r"rejected the request \(400 INVALID_ARGUMENT\): Invalid JSON payload"):
        await make_model().request([Message.user("hi")])
    assert len(gemini_server.requests) == 1


async def test_timeout_is_a_clear_model_timeout(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.stall(60.0)  # never in time: only the client's own limit ends the request
    with pytest.raises(ModelTimeout, match=r"did not answer within 0.3 s"):
        await make_model(timeout_s=0.3).request([Message.user("hi")])
    assert len(gemini_server.requests) == 1  # a timeout is not retried


async def test_unreachable_server_is_retried_then_fails() -> None:
    model = GeminiModel("gemini-test", KEY, base_url="http://127.0.0.1:9", timeout_s=1, backoff_base_s=0.001)
    try:
        with pytest.raises(ModelError, match="Could not reach Gemini"):
            await model.request([Message.user("hi")])
    finally:
        await model.aclose()


async def test_schema_is_sanitised(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    parameters = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0}},
                "required": ["x"],
                "additionalProperties": False,
            },
            "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
        },
        "properties": {
            "at": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "description": "Where"},
            "mode": {"const": "fast", "examples": ["fast"]},
            "level": {"type": ["integer", "null"], "enum": [1, 2, None]},
            "labels": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
            "tree": {"$ref": "#/$defs/Tree"},
        },
        "required": ["mode", "ghost"],
    }
    gemini_server.reply_text("ok")
    tool = ToolDeclaration(name="plot", description="Plot a point", parameters=parameters)
    await make_model().request([Message.user("plot")], tools=[tool])
    sent = norm(declarations(gemini_server.requests[0].body)[0]["parameters"])
    text = json.dumps(sent)
    for keyword in ("$ref", "$defs", "$schema", "additionalProperties", "patternProperties", "const", "examples"):
        assert keyword not in text
    props = sent["properties"]
    assert sent["required"] == ["mode"]
    y = {"type": "NUMBER", "description": "Default: 0."}
    point = {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}, "y": y}, "required": ["x"]}
    assert props["at"] == {**point, "description": "Where", "nullable": True}
    assert props["mode"] == {"type": "STRING", "enum": ["fast"]}
    assert props["level"] == {"type": "INTEGER", "nullable": True, "description": "Allowed values: 1, 2."}
    kids = props["tree"]["properties"]["kids"]["items"]["properties"]["kids"]
    assert kids["items"]["type"] == "OBJECT" and "Recursive" in kids["items"]["description"]


def test_sanitiser_rewrites_type_lists_and_all_of() -> None:
    assert sanitize_schema({"type": ["string", "integer"]}) == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}
    merged = sanitize_schema({"allOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["a"]}]})
    assert merged == {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]}
    assert sanitize_schema({"type": "array"}) == {"type": "ARRAY", "items": {"type": "STRING"}}
    assert sanitize_schema({"type": "string", "format": "email"})["description"] == "Format: email."


async def test_tool_names_are_mapped_and_mapped_back(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    odd, long = "mcp/time server.get time!", "t" * 70
    tools = [ToolDeclaration(name=odd), ToolDeclaration(name=long), WEATHER]
    odd_g, long_g = gemini_tool_name(odd), gemini_tool_name(long)
    gemini_server.reply(call_body(function_call_part(odd_g, {}, id="1"), function_call_part(long_g, {}, id="2")))
    gemini_server.reply_text("done")
    model = make_model()
    first = await model.request([Message.user("go")], tools=tools)
    assert [c.name for c in first.tool_calls] == [odd, long]
    sent = [d["name"] for d in declarations(gemini_server.requests[0].body)]
    assert sent == [odd_g, long_g, "get_weather"]
    assert all(NAME_RE.fullmatch(n) for n in sent) and odd_g != long_g and len(long_g) == 64

    results = [ToolResult(call_id=c.id, name=c.name, content="x") for c in first.tool_calls]
    history = [Message.user("go"), first.to_message(), Message.results(results)]
    await model.request(history, tools=tools)
    model_turn, responses = gemini_server.requests[1].body["contents"][1:]
    assert [p["functionCall"]["name"] for p in model_turn["parts"]] == [odd_g, long_g]
    assert [p["functionResponse"]["name"] for p in responses["parts"]] == [odd_g, long_g]


async def test_structured_output(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    schema = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["steps"],
        "additionalProperties": False,
    }
    gemini_server.reply_text('{"steps": ["look", "answer"]}')
    response = await make_model().request([Message.user("plan")], system="Plan.", response_schema=schema)
    assert response.parsed == {"steps": ["look", "answer"]}
    body = gemini_server.requests[0].body
    assert "tools" not in body
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    sent = norm(config["responseSchema"])
    assert sent["properties"]["steps"] == {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 1}
    assert "additionalProperties" not in json.dumps(sent)


async def test_structured_output_failures(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    model = make_model()
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    gemini_server.reply_text('{"a": "unterminated', finish_reason="MAX_TOKENS")
    with pytest.raises(ModelError, match=r"invalid JSON .*cut off"):
        await model.request([Message.user("x")], response_schema=schema)
    with pytest.raises(ModelError, match="cannot combine tools"):
        await model.request([Message.user("x")], tools=[WEATHER], response_schema=schema)
    assert len(gemini_server.requests) == 1


async def test_blocked_and_empty_answers(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    gemini_server.reply({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}})
    gemini_server.reply(candidate_body([], finish_reason="STOP"))
    model = make_model()
    with pytest.raises(ModelError, match=r"refused to answer \(blocked: SAFETY\)"):
        await model.request([Message.user("x")])
    with pytest.raises(ModelError, match="empty answer"):
        await model.request([Message.user("x")])


async def test_thoughts_are_hidden_and_counted(gemini_server: FakeGemini, make_model: MakeModel) -> None:
    body = candidate_body([{"text": "pondering", "thought": True}, {"text": "42", "thoughtSignature": "c2ln"}])
    body["usageMetadata"]["thoughtsTokenCount"] = 7
    body["modelVersion"] = "gemini-test-001"
    gemini_server.reply(body)
    gemini_server.reply_text("ok")
    model = make_model()
    response = await model.request([Message.user("answer?")])
    assert response.text == "42" and response.model == "gemini-test-001"
    assert response.usage.output_tokens == 5 + 7
    await model.request(roundtrip([Message.user("answer?"), response.to_message(), Message.user("thanks")]))
    model_turn = gemini_server.requests[1].body["contents"][1]
    assert model_turn["parts"][0]["text"] == "42"
    assert base64.urlsafe_b64decode(model_turn["parts"][0]["thoughtSignature"]) == b"sig"


async def test_api_key_never_logged_or_shown(
    gemini_server: FakeGemini, make_model: MakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = make_model(timeout_s=0.3)
    gemini_server.fail(429)
    gemini_server.reply_text("ok")
    gemini_server.fail(403, f"API key {KEY} not valid")  # even a server that echoes the key
    gemini_server.fail(400, f"bad key {KEY}")
    gemini_server.stall(2.0)
    await model.request([Message.user("hi")], tools=[WEATHER])
    failures = []
    for _ in range(3):
        with pytest.raises(ModelError) as info:
            await model.request([Message.user("hi")])
        failures.append(info.value)
    assert "API key" in str(failures[0]) and "***" in str(failures[1])
    assert KEY not in repr(model) and KEY not in str(vars(model).get("base_url"))
    for error in failures:
        assert KEY not in "".join(traceback.format_exception(error))
    assert caplog.records and KEY not in caplog.text


async def test_environment_is_ignored(
    gemini_server: FakeGemini, make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "env-google-key")
    monkeypatch.setenv("GEMINI_API_KEY", "env-gemini-key")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v9")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "someone-elses")
    monkeypatch.setenv("GOOGLE_GENAI_CLIENT_MODE", "replay")
    gemini_server.reply_text("ok")
    assert (await make_model().request([Message.user("hi")])).text == "ok"
    [req] = gemini_server.requests
    assert req.headers["x-goog-api-key"] == KEY and req.path.startswith("/v1beta/")


async def test_default_base_url_is_not_taken_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    model = GeminiModel("gemini-test", KEY)
    try:
        assert model.base_url == "https://generativelanguage.googleapis.com/"
    finally:
        await model.aclose()


def test_empty_key_is_refused() -> None:
    with pytest.raises(ValueError, match="API key"):
        GeminiModel("gemini-test", "  ")
