"""Each kind of check holds when the turn did what it says, and fails (saying what happened instead) when it did
not: run through real gateways with the scripted model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.models.base import ModelResponse
from agents.models.scripted import ScriptedModel
from bot.evals.models import choose
from bot.evals.results import RunResult, TrialResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import parse_suite
from bot.gateway.app import Gateway

TIME_SCRIPT = """
    script:
      - {call: get_current_time, args: {timezone: Europe/Paris}, usage: {input_tokens: 100, output_tokens: 10}}
      - {text: "It is 12:00 in Europe/Paris.", usage: {input_tokens: 150, output_tokens: 20}}
"""


async def run(source: SettingsSource, text: str, **options: Any) -> RunResult:
    options.setdefault("models", [choose("scripted")])
    return await run_suite(parse_suite(text), source, EvalOptions(**options), Path.cwd(), gateway=Gateway)


def checks(trial: TrialResult) -> list[tuple[str, str, bool | None]]:
    return [(c.check, c.expected, c.passed) for turn in trial.turns for c in turn.checks]


async def test_what_a_turn_did_passes_its_checks(settings_source: Callable[..., SettingsSource]) -> None:
    result = await run(
        settings_source(),
        f"""
name: holds
cases:
  - id: time
{TIME_SCRIPT}
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          agent: react
          tool:
            - {{name: get_current_time, args: {{timezone: Europe/Paris}}, match: exact, times: 1}}
            - {{name: get_current_time, args: {{}}, match: subset}}
            - {{name: get_current_time, args: {{timezone: "^Europe/"}}, match: regex}}
            - {{name: get_current_time, args: {{type: object, required: [timezone]}}, match: schema}}
          exact_tools: true
          no_tool: [write_file]
          interrupt: false
          handoff: false
          answer:
            contains: "12:00"
            not_contains: London
            matches: "(?i)europe/paris"
            equals: "It is 12:00 in Europe/Paris."
          status: done
""",
    )
    [trial] = result.trials
    assert trial.passed, trial.failures()
    assert all(passed for _check, _expected, passed in checks(trial)) and len(checks(trial)) == 14
    [turn] = trial.turns
    assert (turn.model_calls, turn.input_tokens, turn.output_tokens) == (2, 250, 30)
    assert [(t.name, t.args) for t in turn.tools] == [("get_current_time", {"timezone": "Europe/Paris"})]
    assert trial.checks[0].check == "script" and trial.checks[0].passed
    assert not trial.events, "the trace is kept for failing trials only"


async def test_what_a_turn_did_not_do_fails_and_says_what_it_did(
    settings_source: Callable[..., SettingsSource],
) -> None:
    result = await run(
        settings_source(),
        f"""
name: fails
cases:
  - id: time
{TIME_SCRIPT}
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          agent: chat
          tool:
            - {{name: get_current_time, args: {{timezone: Europe/Paris, extra: 1}}, match: exact}}
            - {{name: get_current_time, args: {{timezone: Asia/Tokyo}}}}
            - {{name: get_current_time, args: {{timezone: "^Asia/"}}, match: regex}}
            - {{name: get_current_time, args: {{required: [city]}}, match: schema}}
            - {{name: get_current_time, times: 2}}
            - read_file
          no_tool: true
          interrupt: ask_user
          handoff: code-fixer
          answer: {{contains: London, not_contains: Paris, matches: "^Tokyo", equals: "It is noon."}}
          notice: Auto-routing
          status: failed
""",
    )
    [trial] = result.trials
    assert not trial.passed and not result.pass_rate
    assert [passed for _check, _expected, passed in checks(trial)] == [False] * 16
    seen = {(c.check, c.expected): c.seen for c in trial.turns[0].checks}
    assert seen[("agent", "chat")] == "react"
    assert seen[("tool", "read_file")] == 'get_current_time(timezone="Europe/Paris")'
    assert seen[("tool", "get_current_time ×2")].startswith("1 matching call(s)")
    assert seen[("no_tool", "no tool call")] == 'get_current_time(timezone="Europe/Paris")'
    assert seen[("interrupt", "ask_user")] == "no pause" and seen[("status", "failed")] == "done"
    assert seen[("handoff", "… → code-fixer")] == "no handoff"
    assert seen[("answer", "contains 'London'")] == "It is 12:00 in Europe/Paris."
    lines = trial.failures()
    assert lines[0] == "turn 1 (user: @react what time is it in Paris?): agent: expected chat; saw react"
    assert [e["type"] for e in trial.events] == ["route", "llm_call", "tool_call", "llm_call", "run"]


async def test_an_answer_checked_against_a_json_schema(settings_source: Callable[..., SettingsSource]) -> None:
    answer = json.dumps("```json\n" + json.dumps({"verdict": "ok", "files": ["a.py"]}) + "\n```")
    result = await run(
        settings_source(),
        f"""
name: shaped
cases:
  - id: fits
    script: [{answer}]
    turns:
      - user: "@chat review it"
        expect: {{answer: {{schema: {{type: object, required: [verdict], properties: {{files: {{type: array}}}}}}}}}}
  - id: does-not-fit
    script: [{answer}]
    turns:
      - user: "@chat review it"
        expect: {{answer: {{schema: {{type: object, required: [verdict, confidence]}}}}}}
""",
    )
    fits, does_not = result.trials
    assert fits.passed, fits.failures()
    [check] = does_not.turns[0].checks
    assert check.passed is False and check.seen == "missing required field: confidence"


async def test_the_scripted_model_must_be_asked_exactly_as_scripted(
    settings_source: Callable[..., SettingsSource],
) -> None:
    result = await run(
        settings_source(),
        """
name: script
cases:
  - id: one-left-over
    script: ["hello", "never asked"]
    turns: [{user: "@chat hi", expect: {answer: hello}}]
  - id: one-missing
    script: [{call: get_current_time, args: {timezone: UTC}}]
    turns: [{user: "@react the time?", expect: {status: done}}]
  - id: no-script
    turns: [{user: "@chat hi"}]
""",
    )
    left_over, missing, none = result.trials
    assert left_over.turns[0].passed and not left_over.passed
    assert left_over.checks[0].seen == "1 answer(s) never asked for"
    assert not missing.passed and missing.turns[0].status == "failed"
    assert "no scripted step left" in missing.checks[0].seen
    assert none.error == "case no-script has no script for the scripted model" and not none.turns


async def test_a_judge_scores_the_answer_and_its_prompt_is_kept(settings_source: Callable[..., SettingsSource]) -> None:
    def verdict(score: float, reason: str) -> ModelResponse:
        data = {"reason": reason, "pass": score > 0.5, "score": score}
        return ModelResponse(text=json.dumps(data), parsed=data, model="judge-model")

    steps = [verdict(0.9, "it names the city"), verdict(0.4, "no apology"), verdict(0.7, "curt")]
    judge = ScriptedModel(steps, name="judge-model")
    result = await run(
        settings_source(budgets={"prices": {"judge-model": {"input": 1_000_000, "output": 1_000_000}}}),
        """
name: judged
judge: {threshold: 0.5}
cases:
  - id: judged
    script: ["It is noon in Paris."]
    turns:
      - user: "@chat what time is it in Paris?"
        expect:
          judge:
            - names the city asked about
            - {rubric: apologises for the delay, threshold: 0.3}
            - {rubric: is polite, threshold: 0.8}
""",
        judge=judge,
    )
    [trial] = result.trials
    first, second, third = trial.turns[0].checks
    assert (first.passed, second.passed) == (True, True)
    assert first.judge is not None and first.judge.score == 0.9 and first.judge.reason == "it names the city"
    assert "<Answer>\nIt is noon in Paris.\n</Answer>" in first.judge.prompt
    assert "<Rubric>\nnames the city asked about\n</Rubric>" in first.judge.prompt
    assert "<Message>\n@chat what time is it in Paris?\n</Message>" in first.judge.prompt
    assert third.passed is False and third.seen == "0.7: curt" and third.expected == "'is polite' scores ≥ 0.8"
    assert judge.requests[0].response_schema is not None and judge.requests[0].system
    assert trial.judge_cost == 0.0, "a scripted judge spends no tokens"


async def test_the_offline_model_cannot_judge_so_its_checks_are_skipped(
    settings_source: Callable[..., SettingsSource],
) -> None:
    result = await run(
        settings_source(),
        """
name: offline-judge
config: {routing: {strategy: rule}}
cases:
  - id: judged
    turns: [{user: "@chat hello", expect: {judge: is friendly, answer: "[offline model]"}}]
""",
        models=[choose("offline")],
    )
    [trial] = result.trials
    answer, judged = trial.turns[0].checks
    assert answer.passed and judged.passed is None and "cannot judge" in judged.seen
    assert trial.passed, "a skipped check fails nothing"
    assert result.totals.checks == 1, "and counts for nothing"


def test_the_diff_shows_skipped_to_failed_and_compares_a_selection_with_the_same_cases() -> None:
    from datetime import UTC, datetime

    from bot.evals.results import diff

    def run(*trials: TrialResult) -> RunResult:
        return RunResult(id="r", suite="s", started_at=datetime.now(UTC), models=["m"], trials=list(trials))

    full = run(
        TrialResult(case="a", model="m", skipped="the budget was reached"),
        TrialResult(case="b", model="m", passed=True),
        TrialResult(case="c", model="m", passed=True),
    )
    again = run(TrialResult(case="a", model="m", passed=False), TrialResult(case="b", model="m", passed=True))
    changes = diff(full, again)
    assert changes[0] == "compared on the 2 case(s) run this time (1 not run)"
    assert "a [m]: skipped → failed" in changes
    assert not any("not run this time" in line for line in changes)
    assert changes[-1].startswith("m: pass rate 50% → 50%")  # b of a and b, both times


def test_an_endpoint_or_judge_failure_is_a_junit_error_apart_from_failures() -> None:
    import xml.etree.ElementTree as ET
    from datetime import UTC, datetime

    from bot.evals.report import junit
    from bot.evals.results import CheckResult, TurnResult

    at = datetime.now(UTC).isoformat()
    failed_call = {"type": "error", "message": "model error: HTTP 500 from the endpoint", "at": at}  # as stored
    down = TrialResult(case="down", model="m", events=[failed_call])
    judged = TrialResult(
        case="judged", model="m",
        turns=[TurnResult(index=1, action="hi", checks=[CheckResult(check="judge", expected="x", passed=False,
                                                                    seen="the judge failed: timed out")])],
    )  # fmt: skip
    wrong = TrialResult(
        case="wrong", model="m",
        turns=[TurnResult(index=1, action="hi", checks=[CheckResult(check="answer", expected="x", passed=False)])],
    )  # fmt: skip
    run = RunResult(id="r", suite="s", started_at=datetime.now(UTC), models=["m"], trials=[down, judged, wrong])
    root = ET.fromstring(junit(run).split("\n", 1)[1])
    [suite] = root.findall("testsuite")
    assert (suite.get("failures"), suite.get("errors"), root.get("errors")) == ("1", "2", "2")
    kinds = {c.get("name"): [e.tag for e in c if e.tag in ("error", "failure")] for c in suite.findall("testcase")}
    assert kinds == {"down": ["error"], "judged": ["error"], "wrong": ["failure"]}
