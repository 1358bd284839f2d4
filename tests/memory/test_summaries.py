"""Summarised history: turns leaving the window are folded into a running summary per chat, by the configured
model or extractively, so a fact from turn 1 is still there at turn 500 although its message is long gone."""

from __future__ import annotations

from typing import Any

from agents.messages import Message
from agents.models.base import ModelRequest
from bot.memory.summary import extractive


def summary_of(request: ModelRequest) -> str:
    system = request.system or ""
    marker = "Earlier in this conversation (a summary of turns no longer shown):\n"
    return system.split(marker, 1)[1].split("\n\n", 1)[0] if marker in system else ""


async def test_a_fact_from_turn_1_is_available_at_turn_500(make_harness: Any, scripted: Any) -> None:
    def asked_about_the_cat(request: ModelRequest) -> str:
        assert "Pixel" in summary_of(request), request.system
        assert all("Pixel" not in (m.text or "") for m in request.messages), "its turn left the window long ago"
        return "Your cat is called Pixel."

    model = scripted(*(["Noted."] + [f"Answer {i}." for i in range(2, 500)] + [asked_about_the_cat]))
    h = await make_harness(
        model,
        store={"history_limit": 40, "context_chars": 1500, "synchronous": "OFF"},
        limits={"sender_rate_per_min": 0},
    )
    await h.say("My name is Ada and my cat is called Pixel.")
    for i in range(2, 500):
        await h.say(f"Tell me something about the number {i}")
    assert await h.say("What is my cat called?") == ["Your cat is called Pixel."]
    await h.gateway.store.prune()
    kept = await h.gateway.store.read("SELECT count(*) FROM session_messages")
    assert kept[0][0] <= 40 + 2, "retention still holds the history to its limit"
    summary, upto = await h.gateway.memory.memories.summary("console:c1")
    assert "My name is Ada and my cat is called Pixel." in summary and upto > 900

    await h.say("/reset")
    assert await h.gateway.memory.memories.summary("console:c1") == ("", 0)


async def test_the_configured_model_writes_the_summary(make_harness: Any, scripted: Any) -> None:
    def summarise(request: ModelRequest) -> str:
        assert "running summary" in (request.system or "") and not request.tools
        asked = request.messages[-1].text or ""
        assert "User: I moved to Lisbon in May" in asked and "Summary so far:\n(none yet)" in asked
        return "- Ada moved to Lisbon in May."

    def answer(request: ModelRequest) -> str:
        assert summary_of(request) == "- Ada moved to Lisbon in May."
        return "In Lisbon."

    def summarise_again(request: ModelRequest) -> str:
        assert "Summary so far:\n- Ada moved to Lisbon in May." in (request.messages[-1].text or "")
        return "- Ada moved to Lisbon in May; the flat is near the river."

    long = " and it was a lovely sunny day" * 6
    model = scripted("Nice.", "Great.", summarise, answer, summarise_again)
    h = await make_harness(model, store={"context_chars": 400}, memory={"summary": {"model": ""}})
    await h.say("I moved to Lisbon in May" + long)
    await h.say("The flat is near the river" + long)  # the window overflows: turn 1 is summarised after this
    assert await h.say("where do I live now?") == ["In Lisbon."]
    await h.gateway.tracing.flush()
    events = (await h.gateway.tracing.runs("console:c1"))[0]
    assert any(e.type == "memory" and e.data.get("summary_chars") for e in events)
    shown = (await h.say("/trace 2"))[0]
    assert "📝 2 older messages summarised by scripted" in shown, shown


async def test_a_failing_summary_model_falls_back_to_extracting() -> None:
    turns = [
        Message.user("Hello there!"),
        Message.assistant("Hi!"),
        Message.user("What time is it?"),
        Message.user("I am allergic to penicillin. Please remember it."),
        Message.user("我叫小明，我住在上海。"),
    ]
    summary = extractive("- My name is Ada", turns, 200)
    assert summary.splitlines() == [
        "- My name is Ada",
        "- I am allergic to penicillin.",
        "- 我叫小明，我住在上海。",
    ]
    assert len(extractive("", [Message.user(f"My lucky number is {i}.") for i in range(100)], 200)) <= 200
    newest = extractive("", [Message.user(f"My lucky number is {i}.") for i in range(100)], 200)
    assert "99" in newest and "My lucky number is 0." not in newest, "newest first when they do not all fit"
