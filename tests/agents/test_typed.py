"""Models built without validating again (``typed``) are the objects validation makes: equal, the same
fields set, the same ``__dict__`` order, the same JSON; values that are not typed already are validated."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from agents.context import RunContext
from agents.messages import Media, Message, ToolCall, ToolResult, typed
from agents.models.base import Generation, ModelResponse, Usage
from agents.models.scripted import ScriptedModel, call
from agents.react import ReactRunner
from agents.results import FinalAnswer
from agents.tools.base import tool
from agents.tools.ledger import MemoryLedger
from bot.events import ChatKey, OutboundMessage

PHOTO = Media(id="m1", kind="image", mime_type="image/jpeg", size=2048, path="/media/m1.jpg")
VOICE = Media(id="m2", kind="audio", mime_type="audio/ogg", size=99, path="/media/m2.ogg", transcript="hi there")
CALLS = (
    ToolCall(id="c1", name="get_time", args={"timezone": "Europe/Paris"}),
    ToolCall(id="c2", name="search", args={"q": ["a", {"b": 1}]}, provider_meta={"gemini": {"sig": "xyz"}}),
)


def same(cheap: BaseModel, validated: BaseModel) -> None:
    """Everything a reader, a store or a trace could tell apart."""
    assert type(cheap) is type(validated)
    assert cheap == validated
    assert list(cheap.__dict__) == list(validated.__dict__)
    assert cheap.model_fields_set == validated.model_fields_set
    assert cheap.model_dump_json() == validated.model_dump_json()
    assert cheap.model_dump(mode="json", exclude_defaults=True) == validated.model_dump(
        mode="json", exclude_defaults=True
    )
    assert cheap.model_dump(mode="json", exclude_unset=True) == validated.model_dump(mode="json", exclude_unset=True)
    assert cheap.model_dump(mode="json", exclude_none=True) == validated.model_dump(mode="json", exclude_none=True)
    assert repr(cheap) == repr(validated)
    if cheap.model_config.get("frozen"):
        try:
            expected: int | None = hash(validated)
        except TypeError:  # a frozen model holding a dict (tool arguments) has no hash
            expected = None
        if expected is not None:
            assert hash(cheap) == expected


@pytest.mark.parametrize(
    ("text", "media"),
    [("hello", ()), ("", ()), ("a photo: 🌅 and \u00e9", (PHOTO,)), ("two files", (PHOTO, VOICE))],
)
def test_a_user_message_is_the_validated_one(text: str, media: tuple[Media, ...]) -> None:
    same(Message.user(text, media), Message(role="user", text=text, media=media))


@pytest.mark.parametrize(
    "response",
    [
        ModelResponse(text="the answer"),
        ModelResponse(text=None, tool_calls=CALLS),
        ModelResponse(text="thinking aloud", tool_calls=CALLS[:1], provider_meta={"gemini": {"sig": "abc"}}),
        ModelResponse(text="", truncated=True, model="m", usage=Usage(input_tokens=5)),
    ],
)
@pytest.mark.parametrize("agent", [None, "helper"])
def test_a_model_turn_is_the_validated_one(response: ModelResponse, agent: str | None) -> None:
    turn = response.to_message(agent=agent)
    validated = Message(
        role="assistant",
        text=response.text,
        tool_calls=response.tool_calls,
        agent=agent,
        provider_meta=response.provider_meta,
    )
    same(turn, validated)
    if response.provider_meta is not None:  # a copy, as validation makes: the turn does not change with the response
        assert turn.provider_meta is not response.provider_meta


def test_what_is_not_typed_already_is_validated() -> None:
    class Text(str):
        pass

    assert type(Message.user(Text("hello")).text) is str
    with pytest.raises(ValidationError):
        Message.user(42)  # type: ignore[arg-type]
    response = ModelResponse(text="x")
    response.tool_calls = [{"id": "c1", "name": "n", "args": [1]}]  # type: ignore[assignment]  # not frozen
    turn = response.to_message(agent="a")
    assert type(turn.tool_calls) is tuple
    assert turn.tool_calls[0].invalid  # the validator ran: a list is no arguments
    response = ModelResponse(text="x", provider_meta={"k": 1})
    response.provider_meta = {1: "not a string key"}  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        response.to_message()


async def test_a_final_answer_is_the_validated_one() -> None:
    @tool(risk="safe")
    async def get_time(timezone: str = "UTC") -> str:
        """Current time."""
        return f"12:00 {timezone}"

    model = ScriptedModel([call("get_time", {"timezone": "Europe/Paris"}, id="c1"), "It is noon in Paris.", "Again?"])
    ctx = RunContext(chat_key="t:1", model=model, tools=[get_time], ledger=MemoryLedger(), run_id="run-1")
    result = await ReactRunner(name="clock").run(ctx, Message.user("time in Paris?", (PHOTO,)))
    assert isinstance(result, FinalAnswer)
    same(result, FinalAnswer(text=result.text, messages=result.messages, agent="clock"))
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant"]
    assert result.messages[1].tool_results == (ToolResult(call_id="c1", name="get_time", content="12:00 Europe/Paris"),)
    other = await ReactRunner().run(ctx, Message.user("again"))
    assert other.usage is not result.usage  # each its own, as default_factory makes them


@pytest.mark.parametrize("reply_to", [None, "42"])
@pytest.mark.parametrize(
    "chat", [ChatKey(channel="telegram", chat_id="7"), ChatKey(channel="d", chat_id="1", thread_id="t")]
)
def test_a_reply_is_the_validated_one(chat: ChatKey, reply_to: str | None) -> None:
    given: dict[str, Any] = {"chat": chat, "text": "**done** ✅", "reply_to": reply_to, "key": "reply:r1"}
    same(typed(OutboundMessage, given), OutboundMessage(**given))


class Bounded(BaseModel):
    n: int = Field(0, ge=0)


class Tagged(BaseModel):
    tags: list[str] = []


def test_only_models_that_check_types_alone_are_built_so() -> None:
    with pytest.raises(TypeError, match="validates more than types"):
        typed(ToolCall, {"id": "c", "name": "n"})  # its validator replaces unusable arguments
    with pytest.raises(TypeError, match="built only by validation"):
        typed(Generation, {"temperature": 9.0})  # 0 ≤ temperature ≤ 2, and no extra fields
    with pytest.raises(TypeError, match="constraints"):
        typed(Bounded, {"n": -1})
    with pytest.raises(TypeError, match="mutable default"):
        typed(Tagged, {})  # validation would copy the default list
    with pytest.raises(TypeError, match="do not fit"):
        typed(Message, {"role": "user", "colour": "red"})
    with pytest.raises(TypeError, match="do not fit"):
        typed(FinalAnswer, {"text": "x"})  # its usage is made by a factory: the caller makes it
