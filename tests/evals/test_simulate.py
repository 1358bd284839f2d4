"""Simulated users (``simulate:`` cases): a model plays the person from a goal through the same seat as written
turns (approvals pressed by label), bounded in turns and cost, its calls counted apart; a simulator that does not
answer with an action is an error, a button pressed that the bot does not show is told back once, then fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from bot.cli.eval_setup import unjudged
from bot.evals.models import choose
from bot.evals.preflight import BadSetUp
from bot.evals.report import report
from bot.evals.results import RunResult, TrialResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import SuiteError, parse_suite
from bot.gateway.app import Gateway
from tests.fakes.openai_server import FakeOpenAI

WRITE = '{call: write_file, args: {path: notes.txt, content: "hello"}}'


async def run(source: SettingsSource, text: str, **options: Any) -> RunResult:
    options.setdefault("models", [choose("scripted")])
    return await run_suite(parse_suite(text), source, EvalOptions(**options), Path.cwd(), gateway=Gateway)


def by_case(result: RunResult) -> dict[str, TrialResult]:
    return {t.case: t for t in result.trials}


def verdict(score: float) -> str:
    return json.dumps({"reason": "as the rubric says", "pass": score >= 0.7, "score": score})


async def test_a_scripted_person_reaches_the_goal_through_an_approval(
    settings_source: Callable[..., SettingsSource],
) -> None:
    judge = ScriptedModel([verdict(0.9)], name="judge")
    result = await run(
        settings_source(),
        f"""
name: simulated
cases:
  - id: write-by-a-person
    files: {{notes.txt: old}}
    script: [{WRITE}, "Written."]
    simulate:
      goal: get notes.txt to say hello, approving the write
      persona: terse
      every_turn: {{no_tool: [run_command]}}
      expect: {{tool: {{name: write_file, args: {{path: notes.txt}}}}, files: {{notes.txt: hello}}, status: done}}
      success: notes.txt says hello
      script:
        - {{say: "@react write hello to notes.txt"}}
        - {{press: Yes please}}                  # no such button: told back once
        - {{press: Approve}}
        - {{done: true, reason: it is written}}
""",
        judge=judge,
    )
    [trial] = result.trials
    assert trial.passed, trial.failures()
    assert [t.action for t in trial.turns] == ["user: @react write hello to notes.txt", "press: Approve"]
    assert trial.turns[0].interrupts == ["tool_confirm"] and trial.turns[1].tools[0].name == "write_file"
    assert [(c.check, c.passed) for c in trial.checks] == [
        ("goal", True), ("tool", True), ("files", True), ("status", True), ("success", True), ("script", True),
    ]  # fmt: skip
    assert trial.simulator is not None and trial.simulator.calls == 4
    assert trial.simulator.ended == "done after 2 turns: it is written"
    [asked] = judge.requests
    said = asked.messages[-1].text or ""
    assert "Person: @react write hello to notes.txt" in said and "Person pressed: Approve" in said


async def test_bounded_in_turns_and_cost_and_success_can_overrule(
    settings_source: Callable[..., SettingsSource],
) -> None:
    source = settings_source(budgets={"prices": {"scripted": {"input": 1000.0, "output": 0.0}}})  # $0.1 a step
    usage = "usage: {input_tokens: 100}"
    result = await run(
        source,
        f"""
name: bounded
cases:
  - id: out-of-turns
    script: ["Hello!", "Hello again!"]
    simulate:
      goal: get the bot to sing
      max_turns: 2
      script: [{{say: "@chat hi"}}, {{say: "@chat sing"}}, {{say: "@chat please"}}]
  - id: out-of-turns-but-sung
    script: ["Hello!"]
    simulate:
      goal: get the bot to sing
      max_turns: 1
      success: the bot sang
      script: [{{say: "@chat sing"}}, {{say: "@chat again"}}]
  - id: over-cost
    script: [{{text: "Hello!", {usage}}}]
    simulate:
      goal: chat for a long time
      max_cost: 0.15
      script: [{{say: "@chat hi", {usage}}}]
""",
        judge=ScriptedModel([verdict(0.8)], name="judge"),
    )
    trials = by_case(result)
    turns, sung, cost = trials["out-of-turns"], trials["out-of-turns-but-sung"], trials["over-cost"]
    assert not turns.passed and len(turns.turns) == 2
    assert turns.simulator is not None and turns.simulator.calls == 3, "asked once more when no turn was left"
    assert "goal: expected the person reaches the goal; saw the goal was not reached in 2 turns" in turns.failures()
    assert sung.passed, sung.failures()
    assert sung.checks[0].seen == "the goal was not reached in 1 turns; success holds"
    assert not cost.passed and len(cost.turns) == 1
    assert cost.simulator is not None and cost.simulator.calls == 1
    assert cost.simulator.cost == pytest.approx(0.1) and cost.cost == pytest.approx(0.2), "the agent's and its own"
    assert cost.checks[0].seen == "max_cost $0.15 was reached ($0.2000 spent) after 1 turns"
    totals = result.by_model()["scripted"]
    assert totals.simulator_cost == pytest.approx(0.1 * 1 + 0.1 * 0)  # only the over-cost script has usage
    assert "simulator $0.1000" in report(result)


async def test_a_simulator_that_does_not_answer_with_an_action(
    settings_source: Callable[..., SettingsSource],
) -> None:
    result = await run(
        settings_source(),
        """
name: broken-simulator
cases:
  - id: repaired
    script: ["Hello!"]
    simulate:
      goal: greet the bot
      script:
        - 'Sure: {"say": "@chat hi"} is what I say'
        - "```json\\n{\\"done\\": true, \\"reason\\": \\"greeted\\"}\\n```"
  - id: not-json
    script: []
    simulate:
      goal: greet the bot
      script: ["I would say hi", '{"say": "hi", "press": "Approve"}']
  - id: missing-button
    script: ["Hello!"]
    simulate:
      goal: approve something
      script: [{say: "@chat hi"}, {press: Approve}, {press: Approve}]
""",
    )
    trials = by_case(result)
    assert trials["repaired"].passed, trials["repaired"].failures()
    broken = trials["not-json"]
    assert not broken.passed and broken.turns == []
    assert broken.error == (
        "the simulator scripted did not answer with an action (asked twice): "
        'not one action (say, press or done): {"say": "hi", "press": "Approve"}'
    )
    assert broken.errored == broken.error, "the simulator failed, not the bot: an error apart from failures"
    pressed = trials["missing-button"]
    assert not pressed.passed and pressed.errored is None and len(pressed.turns) == 1
    assert pressed.checks[0].seen == "pressed 'Approve' again, a button the bot does not show (it shows: none)"


SUITE_ON_ENDPOINT = """
name: endpoint
cases:
  - id: write
    simulate:
      goal: notes.txt says hello
      first: "@react write hello to notes.txt"
      max_cost: 1
      expect: {files: {notes.txt: hello}}
"""


async def test_the_simulator_sees_the_buttons_its_calls_count_and_a_rerun_is_cached(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource]
) -> None:
    openai_server.call("write_file", {"path": "notes.txt", "content": "hello"})  # each answer: 12 in, 5 out
    openai_server.reply(json.dumps({"press": "Approve"}))  # the simulator (the model under test itself)
    openai_server.reply("Written.")
    openai_server.reply(json.dumps({"done": True, "reason": "it says hello"}))
    source = settings_source(
        model={"max_retries": 0, "providers": {"openai": {"api_key": "sk-test", "base_url": openai_server.base_url}}},
        budgets={"prices": {"fake-model": {"input": 2.0, "output": 8.0}}},
        routing={"strategy": "rule"},
    )
    result = await run(
        source,
        SUITE_ON_ENDPOINT,
        models=[choose("openai/fake-model")],
        cache=True,
    )
    [trial] = result.trials
    assert trial.passed, trial.failures()
    asked = openai_server.requests[1].body
    assert asked["response_format"]["type"] == "json_schema"
    prompt = asked["messages"][-1]["content"]
    assert "Person: @react write hello to notes.txt" in prompt and "<Goal>\nnotes.txt says hello" in prompt
    assert "Buttons you can press now:" in prompt and "Approve" in prompt
    totals = result.by_model()["openai/fake-model"]
    assert (totals.model_calls, totals.input_tokens, totals.output_tokens) == (4, 48, 20)
    assert totals.simulator_cost == pytest.approx(2 * (12 * 2 + 5 * 8) / 1e6)
    assert totals.cost == pytest.approx(4 * (12 * 2 + 5 * 8) / 1e6)

    again = await run(source, SUITE_ON_ENDPOINT, models=[choose("openai/fake-model")], cache=True)
    assert len(openai_server.requests) == 4, "the rerun's person and bot were answered from the cache"
    [trial] = again.trials
    assert trial.passed and trial.simulator is not None
    assert (trial.simulator.calls, trial.simulator.cached_calls, trial.cost) == (2, 2, 0.0)


def test_suite_errors_name_their_lines() -> None:
    with pytest.raises(SuiteError) as raised:
        parse_suite(
            """name: bad
cases:
  - id: typo
    simulate: {gaol: x}
  - id: too-long
    simulate: {goal: x, max_turns: 31}
"""
        )
    problems = raised.value.problems
    assert problems[0].startswith("line 4: cases[0].simulate: unknown key 'gaol' (did you mean 'goal'?)")
    assert problems[1] == "line 6: cases[1].simulate.max_turns: 31 is greater than the maximum of 30"
    with pytest.raises(SuiteError) as raised:
        parse_suite(
            "name: bad\ncases:\n  - id: both\n    turns: [{user: hi}]\n    simulate: {goal: x}\n  - id: neither\n"
        )
    assert raised.value.problems == [
        "line 3: cases[0]: a case has turns or simulate (one of them)",
        "line 6: cases[1]: a case has turns or simulate (one of them)",
    ]
    with pytest.raises(SuiteError) as raised:  # run_suite's trust gate reads the case's own check:, not these
        parse_suite("name: bad\ncases:\n  - id: code\n    simulate: {goal: x, expect: {check: 'helpers:f'}}\n")
    assert raised.value.problems[0].startswith("line 4: cases[0].simulate: Python checks of a simulated conversation")


async def test_set_up_errors_before_any_model_call(
    settings_source: Callable[..., SettingsSource], openai_server: FakeOpenAI
) -> None:
    text = """
name: set-up
cases:
  - id: offline-person
    simulate: {goal: x}
  - id: no-script
    simulate: {goal: x, model: scripted, every_turn: {no_tool: [delete_file]}}
  - id: unpriced
    simulate: {goal: x, model: openai/unpriced-model, max_cost: 0.05}
"""
    source = settings_source(
        model={"providers": {"openai": {"api_key": "sk-test", "base_url": openai_server.base_url}}}
    )
    with pytest.raises(BadSetUp) as raised:
        await run(source, text, models=[choose("offline")])
    said = str(raised.value)
    assert "case offline-person (offline): the offline model cannot play a person" in said
    assert "case no-script (offline): the scripted simulator has no simulate.script" in said
    assert "case no-script, simulate.every_turn: no tool is named 'delete_file'" in said
    assert "case unpriced (offline): max_cost $0.05 could not stop the conversation" in said
    assert openai_server.requests == []
    success = parse_suite("name: j\ncases:\n  - id: s\n    simulate: {goal: x, success: reached}\n")
    assert "1 case(s) have judge: checks no model can score (s)" in (unjudged(success, None, ["scripted"]) or "")
