"""A held-out suite against a fake OpenAI-compatible endpoint (the real ``openai`` client over loopback): the
figures the run reports are exactly what the endpoint was scripted to do — its calls, tokens (cached ones
included), the tool call it asked for, and the cost at the configured prices, the judge's apart."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.evals.models import choose
from bot.evals.report import junit, report
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import parse_suite
from bot.gateway.app import Gateway
from tests.fakes.openai_server import FakeOpenAI

HELD_OUT = """
name: held-out
config: {routing: {strategy: rule}}
cases:
  - id: time-in-paris
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          agent: react
          tool: {name: get_current_time, args: {timezone: Europe/Paris}, match: exact}
          answer: noon
          judge: says what time it is in Paris
  - id: hello
    turns:
      - user: "@chat hello"
        expect: {agent: chat, no_tool: true, answer: Hello}
"""
PRICES = {"fake-model": {"input": 2.0, "output": 8.0, "cached": 0.5}}
"""Per million tokens."""


async def test_the_numbers_are_what_the_endpoint_did(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource]
) -> None:
    openai_server.call("get_current_time", {"timezone": "Europe/Paris"})  # every answer: 12 prompt, 5 completion
    openai_server.reply("It is noon in Paris.", cached=4)
    openai_server.reply(json.dumps({"reason": "it says noon in Paris", "pass": True, "score": 0.9}))  # the judge
    openai_server.reply("Hello!")
    source = settings_source(
        model={"max_retries": 0, "providers": {"openai": {"api_key": "sk-test", "base_url": openai_server.base_url}}},
        budgets={"prices": PRICES},
    )
    options = EvalOptions(models=[choose("openai/fake-model")], concurrency=1)
    result = await run_suite(parse_suite(HELD_OUT), source, options, Path.cwd(), gateway=Gateway)

    assert [t.passed for t in result.trials] == [True, True], [t.failures() for t in result.trials]
    totals = result.by_model()["openai/fake-model"]
    assert (totals.model_calls, totals.input_tokens, totals.output_tokens, totals.cached_tokens) == (3, 36, 15, 4)
    assert totals.tool_calls == 1
    agent_cost = (12 * 2 + 5 * 8) + (8 * 2 + 4 * 0.5 + 5 * 8) + (12 * 2 + 5 * 8)  # fresh, cached, output
    judge_cost = 12 * 2 + 5 * 8
    assert totals.judge_cost == pytest.approx(judge_cost / 1e6)
    assert totals.cost == pytest.approx((agent_cost + judge_cost) / 1e6)
    paris = result.trials[0]
    [judged] = [c for c in paris.turns[0].checks if c.check == "judge"]
    assert judged.passed and judged.judge is not None
    assert (judged.judge.model, judged.judge.score, judged.judge.input_tokens) == ("openai/fake-model", 0.9, 12)

    requests = [r.body for r in openai_server.requests]
    assert len(requests) == 4 and {r["model"] for r in requests} == {"fake-model"}
    assert "get_current_time" in [t["function"]["name"] for t in requests[0]["tools"]]
    assert requests[0].get("stream") is True, "streamed, as every platform streams by default"
    assert requests[1]["messages"][-1]["role"] == "tool", "the tool's result went back to the endpoint"
    assert requests[2]["response_format"]["type"] == "json_schema", "the judge asked for its verdict's shape"
    assert "<Rubric>\nsays what time it is in Paris\n</Rubric>" in requests[2]["messages"][-1]["content"]

    text = report(result)
    assert "openai/fake-model: 2/2 passed (100%), 7/7 checks, 3 model calls, 36 → 15 tokens, 1 tool calls" in text
    assert f"${(agent_cost + judge_cost) / 1e6:.4f}" in text
    assert 'tests="2" failures="0"' in junit(result)


async def test_the_routing_models_call_is_counted_with_the_agents(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource]
) -> None:
    openai_server.call("transfer_to_chat", {})  # the router's choice: 12 prompt, 5 completion tokens
    openai_server.reply("Hello!")  # the chat agent's answer
    source = settings_source(
        model={"max_retries": 0, "providers": {"openai": {"api_key": "sk-test", "base_url": openai_server.base_url}}},
        budgets={"prices": PRICES},
    )
    suite = parse_suite(
        "name: routed\nconfig: {routing: {strategy: llm}}\ncases:\n  - id: hello\n    turns:\n"
        "      - user: hello there\n        expect: {agent: chat, answer: Hello}\n"
    )
    options = EvalOptions(models=[choose("openai/fake-model")], concurrency=1)
    result = await run_suite(suite, source, options, Path.cwd(), gateway=Gateway)

    assert [t.passed for t in result.trials] == [True], [t.failures() for t in result.trials]
    assert len(openai_server.requests) == 2
    totals = result.by_model()["openai/fake-model"]
    assert (totals.model_calls, totals.input_tokens, totals.output_tokens) == (2, 24, 10)
    assert totals.cost == pytest.approx(2 * (12 * 2 + 5 * 8) / 1e6)
