"""The scripted test model and the offline model."""

from __future__ import annotations

import pytest

from agents.chat import ChatRunner
from agents.context import RunContext
from agents.messages import Message, ToolResult, fit_context, unanswered_calls
from agents.models.base import ModelResponse, ToolDeclaration
from agents.models.offline import LABEL, OfflineModel
from agents.models.scripted import ScriptedModel, ScriptError, call, calls
from agents.results import FinalAnswer


async def test_scripted_replays_and_records() -> None:
    model = ScriptedModel(["hello", call("get_time", {"tz": "UTC"}, id="c1"), lambda req: f"n={len(req.messages)}"])
    assert (await model.request([Message.user("a")])).text == "hello"
    r = await model.request([Message.user("b")], tools=[ToolDeclaration(name="get_time")])
    assert r.tool_calls[0].name == "get_time" and r.tool_calls[0].id == "c1"
    assert (await model.request([Message.user("c"), Message.user("d")])).text == "n=2"
    assert model.requests[1].tools[0].name == "get_time"
    model.assert_complete()


async def test_scripted_fails_on_missing_step() -> None:
    model = ScriptedModel([])
    with pytest.raises(ScriptError):
        await model.request([Message.user("x")])
    with pytest.raises(ScriptError, match="no scripted step left"):
        model.assert_complete()


def test_scripted_fails_on_unused_step() -> None:
    model = ScriptedModel(["never used"])
    with pytest.raises(ScriptError, match="never used"):
        model.assert_complete()


async def test_scripted_raises_scripted_exceptions() -> None:
    model = ScriptedModel([TimeoutError("slow")])
    with pytest.raises(TimeoutError):
        await model.request([Message.user("x")])


async def test_offline_model_is_labelled() -> None:
    r = await OfflineModel().request([Message.user("why is the sky blue?")])
    assert r.text is not None and r.text.startswith(LABEL) and "why is the sky blue?" in r.text
    assert "GEMINI_API_KEY" in r.text and "what time is it in Tokyo" in r.text, "it says what to try"


async def test_offline_model_answers_a_response_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
        "required": ["steps"],
    }
    r = await OfflineModel().request([Message.user("Request: plan a trip")], response_schema=schema)
    assert r.parsed == {
        "steps": [
            "List what a trip needs (dates, budget, constraints)",
            "Work out the options for a trip and pick the best",
            "Write up the plan for a trip as a short checklist",
        ]
    }
    other = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}
    assert (await OfflineModel().request([Message.user("ok")], response_schema=other)).parsed == {"verdict": "ok"}


async def test_offline_model_calls_a_named_tool_then_reports_its_result() -> None:
    tool = ToolDeclaration(name="get_current_time", parameters={"type": "object", "properties": {}})
    r = await OfflineModel().request([Message.user("please run get_current_time")], tools=[tool])
    assert [c.name for c in r.tool_calls] == ["get_current_time"]
    history = [
        Message.user("please run get_current_time"),
        r.to_message(),
        Message.results([ToolResult(call_id=r.tool_calls[0].id, name="get_current_time", content="12:00")]),
    ]
    final = await OfflineModel().request(history, tools=[tool])
    assert final.text is not None and LABEL in final.text and "12:00" in final.text


async def test_chat_runner_uses_history_and_system_prompt() -> None:
    model = ScriptedModel([ModelResponse(text="answer")])
    ctx = RunContext(chat_key="t:1", model=model, history=[Message.user("earlier"), Message.assistant("reply")])
    result = await ChatRunner(system_prompt="be brief").run(ctx, Message.user("now"))
    assert isinstance(result, FinalAnswer) and result.text == "answer"
    assert result.messages == (Message.assistant("answer", agent="chat"),)
    assert model.requests[0].system == "be brief"
    assert [m.text for m in model.requests[0].messages] == ["earlier", "reply", "now"]
    model.assert_complete()


def test_fit_context_starts_at_a_user_turn() -> None:
    r = calls(("t", {}, "c1"))
    history = [
        Message.user("u" * 50),
        r.to_message(),
        Message.results([ToolResult(call_id="c1", name="t", content="x" * 30)]),
        Message.assistant("done"),
        Message.user("next"),
    ]
    window = fit_context(history, 45)
    assert window == [Message.user("next")] or window[0].role == "user"
    assert fit_context(history, 10_000) == history
    assert unanswered_calls(history) == []
    assert [c.id for c in unanswered_calls(history[:2])] == ["c1"]
