"""Budgets: a daily token budget used up in the middle of a conversation (and of a ReAct loop), a chat's
budget shared by its members, cost from the price table, admins exempt when configured, /usage, and the
reset at midnight in the configured time zone."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.models.base import ModelResponse, Usage
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.clock import FakeClock
from bot.ops.budgets import BudgetExceeded, Budgets, Payer
from bot.store.sql.repos.usage import UsageStore


def answer(text: str, tokens: int = 60) -> ModelResponse:
    """A text answer that used ``tokens`` (two thirds input)."""
    return ModelResponse(text=text, usage=Usage(input_tokens=tokens * 2 // 3, output_tokens=tokens - tokens * 2 // 3))


def budgets(**user: Any) -> dict[str, Any]:
    return {"budgets": {"user": user}}


async def test_daily_budget_used_up_mid_conversation(make_harness: Any) -> None:
    model = ScriptedModel([answer("One."), answer("Two.")])  # a third call would fail the test
    h = await make_harness(model, **budgets(daily_tokens=100))
    assert await h.say("first question") == ["One."]
    assert await h.say("second question") == ["Two."]  # 60 < 100 before it: asked; 120 after
    [refusal] = await h.say("third question")
    assert refusal.startswith("⛔ You have used your daily model budget (120 of 100 tokens)")
    assert "It resets at midnight UTC, in" in refusal
    model.assert_complete()
    [usage] = await h.say("/usage")
    assert "You: today 120 tokens of 100" in usage and "(2 model calls)" in usage
    assert "This chat: today 120 tokens" in usage
    assert len(await h.gateway.runs.runs_with_status("stopped")) == 1, "the refused run ended cleanly"
    assert not await h.gateway.runs.runs_with_status("running", "paused")
    # Counted in the metrics too.
    from prometheus_client import generate_latest

    assert 'bot_budget_refusals_total{scope="user"} 1.0' in generate_latest(h.gateway.metrics.registry).decode()


async def test_budget_runs_out_inside_a_tool_loop(make_harness: Any) -> None:
    ran: list[str] = []

    @tool()
    async def lookup(q: str) -> str:
        """Look something up."""
        ran.append(q)
        return f"found {q}"

    first = call("lookup", {"q": "weather"}).model_copy(update={"usage": Usage(input_tokens=90, output_tokens=30)})
    model = ScriptedModel([first])  # the loop's second call is refused before it reaches the model
    h = await make_harness(model, tools=[lookup], **budgets(daily_tokens=100))
    [refusal] = await h.say("@react what's the weather")
    assert ran == ["weather"], "the tool ran once, before the budget ran out"
    assert "daily model budget (120 of 100 tokens)" in refusal
    model.assert_complete()
    # The next message is refused too, and nothing is lost: the chat still answers commands.
    [again] = await h.say("hello?")
    assert again.startswith("⛔")
    assert "/usage" in (await h.say("/help"))[0]


async def test_chat_budget_is_shared_and_names_the_chat(make_harness: Any) -> None:
    model = ScriptedModel([answer("For alice.", 80)])
    h = await make_harness(model, **{"budgets": {"chat": {"daily_tokens": 50}}})
    group = h.chat("team")
    assert await h.say("question", chat=group, user="alice") == ["For alice."]
    [refusal] = await h.say("another", chat=group, user="bob")
    assert refusal.startswith("⛔ This chat has used its daily model budget (80 of 50 tokens)")
    model.assert_complete()


async def test_cost_budget_from_the_price_table_and_admins_exempt(make_harness: Any) -> None:
    priced = ModelResponse(
        text="Costly.", model="gemini-2.5-pro", usage=Usage(input_tokens=1_000_000, output_tokens=100_000)
    )
    model = ScriptedModel([priced, answer("Admin answer.")])
    h = await make_harness(
        model,
        admins=["boss"],
        budgets={
            "user": {"daily_cost": 2.0},
            "admins_exempt": True,
            "prices": {"gemini-2.5-pro": {"input": 1.25, "output": 10}},
        },
    )
    assert await h.say("expensive", user="u1") == ["Costly."]  # 1.25 + 1.00 = 2.25 USD
    [refusal] = await h.say("more", user="u1")
    assert "daily model budget (2.25 of 2.00 USD)" in refusal
    assert await h.say("as admin", user="boss") == ["Admin answer."]
    [usage] = await h.say("/usage", user="u1")
    assert "2.2500 USD of 2.00" in usage
    [top] = await h.say("/usage top", user="boss")
    assert top.splitlines()[1].startswith("1. console:u1: 1,100,000 tokens, 2.2500 USD")
    assert (await h.say("/usage top", user="u1"))[0].startswith("Only admins")


async def test_limits_reset_at_midnight_in_the_configured_zone(make_harness: Any) -> None:
    h = await make_harness(
        ScriptedModel([]), budgets={"timezone": "Europe/Berlin", "user": {"daily_tokens": 100, "monthly_tokens": 1000}}
    )
    berlin = ZoneInfo("Europe/Berlin")
    clock = FakeClock(datetime(2026, 3, 28, 23, 59, tzinfo=berlin))  # the night before summer time
    store = h.gateway.store
    guard = Budgets(h.gateway.settings.budgets, UsageStore(store), clock=clock)
    payer = Payer("console:u9", "console:c9")
    await guard.spend(payer, answer("x", 150), "m")
    try:
        await guard.check(payer)
    except BudgetExceeded as exc:
        assert "midnight Europe/Berlin, in 1 min" in str(exc)
    else:
        raise AssertionError("over the daily budget")
    await clock.advance_to(datetime(2026, 3, 29, 0, 1, tzinfo=berlin))  # a new day there (22:01 UTC the day before)
    await guard.check(payer)
    assert guard.periods() == ("d2026-03-29", "m2026-03")
    await guard.spend(payer, answer("x", 450), "m")
    await clock.advance_to(datetime(2026, 3, 30, 12, 0, tzinfo=berlin))
    await guard.spend(payer, answer("x", 450), "m")
    await clock.advance_to(datetime(2026, 3, 31, 10, 0, tzinfo=berlin))  # nothing today; 1,050 this month
    try:
        await guard.check(payer)
    except BudgetExceeded as exc:
        assert "monthly model budget (1,050 of 1,000 tokens)" in str(exc)
        assert "resets at 2026-04-01 00:00 Europe/Berlin, in 14 h 0 min" in str(exc)
    else:
        raise AssertionError("over the monthly budget")
    await clock.advance_to(datetime(2026, 4, 1, 0, 0, 1, tzinfo=berlin))
    await guard.check(payer)


def test_a_price_keyed_provider_slash_name_counts_for_the_bare_name_a_response_gives() -> None:
    from bot.config.ops import BudgetsSection

    prices = {"openai/model-b": {"input": 1, "output": 2}, "gemini-2.5-pro": {"input": 1.25, "output": 10}}
    budgets = BudgetsSection.model_validate({"prices": prices})
    assert budgets.price("model-b") == budgets.prices["openai/model-b"]  # the response names it bare
    assert budgets.price("openai/model-b") == budgets.prices["openai/model-b"]
    assert budgets.price("gemini/gemini-2.5-pro") == budgets.prices["gemini-2.5-pro"]
    assert budgets.price("model-c") is None
    # Two providers' different prices for one bare name: which one answered is unknown, so none is guessed.
    both = BudgetsSection.model_validate({"prices": {**prices, "other/model-b": {"input": 9, "output": 9}}})
    assert both.price("model-b") is None and both.price("other/model-b") == both.prices["other/model-b"]
