"""The pairwise judge (``expect: {pairwise: RUBRIC}``): after the trials, two models' answers to a turn are shown to
a judge in a seeded random order, and again swapped (two verdicts that differ are a tie); the run keeps each
verdict and prints a win/tie/loss line per pair. It passes or fails nothing, its calls count in the cost and the
budget, one model compares nothing (skipped, said why), and no judge (or the offline one) is a set-up error."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.models.base import ModelRequest, ModelResponse, Usage
from agents.models.scripted import ScriptedModel
from bot.cli.eval_setup import unjudged
from bot.config.settings import Settings, load_settings
from bot.evals.models import JudgeModels, ModelChoice
from bot.evals.pairs import pairwise_lines
from bot.evals.pairwise import Pairwise, cost_at
from bot.evals.report import report
from bot.evals.results import TrialResult, TurnResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import Case, parse_suite
from bot.gateway.app import Gateway
from tests.fakes.openai_server import FakeOpenAI

SUITE = """
name: pairs
config: {routing: {strategy: rule, rule: {meaning: false}}}
cases:
  - id: tokyo
    turns:
      - user: "@chat what time is it in Tokyo?"
        expect: {answer: Tokyo, pairwise: says what time it is in Tokyo}
      - user: "@chat and in Paris?"
        expect: {pairwise: {rubric: whichever comes first, swap: true}}
"""
ANSWERS = {
    "model-a": ["It is 9:00 in Tokyo.", "It is 2:00 in Paris."],
    "model-b": ["Tokyo? No idea.", "No idea."],
}
PRICES = {"judge": {"input": 1.0, "output": 2.0}}
CALL_COST = (100 * 1.0 + 10 * 2.0) / 1e6


def _judges(settings: Settings) -> JudgeModels:
    return JudgeModels(settings.model, timezone=settings.jobs.timezone, inline_max_mb=settings.media.inline_max_mb)


def _model(label: str) -> ModelChoice:
    return ModelChoice(label, make=lambda case: ScriptedModel(ANSWERS[label], name=label))


def _verdict(request: ModelRequest) -> ModelResponse:
    """A judge that prefers the answer naming 9:00 — or, for the rubric 'whichever comes first', answer A
    whatever it says (a judge biased by the order)."""
    prompt = request.messages[-1].text or ""
    first = re.search(r"<Answer A>\n(.*?)\n</Answer A>", prompt, re.DOTALL)
    assert first is not None and request.response_schema is not None
    if "whichever comes first" in prompt:
        winner = "A"
    else:
        winner = "A" if "9:00" in first.group(1) else "B"
    verdict = {"reason": f"{winner} says the time", "winner": winner}
    return ModelResponse(text=json.dumps(verdict), usage=Usage(input_tokens=100, output_tokens=10), model="judge")


async def test_two_models_compared_per_turn_and_attempt(settings_source: Callable[..., SettingsSource]) -> None:
    judge = ScriptedModel([_verdict] * 4, name="judge")  # 2 turns × 1 pair × both orders
    source = settings_source(budgets={"prices": PRICES})
    options = EvalOptions(models=[_model("model-a"), _model("model-b")], judge=judge)
    result = await run_suite(parse_suite(SUITE), source, options, gateway=Gateway)

    # A comparison, not a check: every trial passes on its own checks (model-b's answer holds 'Tokyo' too).
    assert [t.passed for t in result.trials] == [True] * 2, [t.failures() for t in result.trials]
    assert not [c for t in result.trials for c in t.all_checks if c.check == "pairwise"]
    assert judge.remaining == 0
    pairs = result.pairwise
    assert [(p.turn, p.attempt, p.models, p.winner) for p in pairs] == [
        (1, 1, ["model-a", "model-b"], "model-a"),
        (2, 1, ["model-a", "model-b"], "tie"),
    ]
    first = pairs[0]
    assert first.judge == "judge" and first.reason in ("A says the time", "B says the time")
    assert [v.first for v in first.verdicts] in (["model-a", "model-b"], ["model-b", "model-a"]), "both orders"
    assert "It is 9:00 in Tokyo." in first.verdicts[0].prompt and "Tokyo? No idea." in first.verdicts[0].prompt
    assert "<Message>\n@chat what time is it in Tokyo?\n</Message>" in first.verdicts[0].prompt
    assert pairs[1].reason.startswith("the verdicts differ when the order is swapped, so a tie: ")

    # The judge's calls count in the run's cost (apart from each model's), and its details are in the JSON.
    assert result.pairwise_cost == pytest.approx(4 * CALL_COST)
    assert result.summary()["cost"] == pytest.approx(4 * CALL_COST)
    assert json.loads(result.model_dump_json())["pairwise"][0]["verdicts"][0]["input_tokens"] == 100
    text = report(result)
    assert "Pairwise (judge judge: 4 calls, 400 → 40 tokens, $0.0005):" in text
    assert "  model-a vs model-b: 1 win, 1 tie, 0 losses" in text
    assert "model-a: 1/1 passed (100%)" in text and "model-b: 1/1 passed (100%)" in text

    # The order shown first is drawn from the comparison itself: asked again, the judge sees the same prompts.
    again = ScriptedModel([_verdict] * 4, name="judge")
    pairwise = Pairwise(parse_suite(SUITE), _judges(source({})), again, cost_at(source({})))
    assert [v.prompt for p in await pairwise.compare(result.trials) for v in p.verdicts] == [
        v.prompt for p in pairs for v in p.verdicts
    ]

    # A budget: no comparison starts once it is spent (the first one's two calls are paid for).
    judge = ScriptedModel([_verdict] * 2, name="judge")
    pairwise = Pairwise(parse_suite(SUITE), _judges(source({})), judge, cost_at(source({})), budget=CALL_COST)
    pairs = await pairwise.compare(result.trials, spent=0.0)
    assert [p.winner for p in pairs] == ["model-a", None] and pairwise.spent == 2 * CALL_COST
    assert pairs[1].skipped == "the budget of $0.00012 was reached ($0.0002 spent)"


async def test_one_model_a_judge_that_fails_and_no_judge(tmp_path: Path) -> None:
    suite = parse_suite(SUITE)
    settings = load_settings(None, env={}, user_config=tmp_path / "none.yaml")
    trials = [_trial(label, attempt) for label in ANSWERS for attempt in (1,)]

    alone = await Pairwise(suite, _judges(settings), None, cost_at(settings)).compare(trials[:1])
    why = "the run has one model (model-a); a pairwise check compares two or more (--models A,B)"
    assert [(p.models, p.skipped, p.winner) for p in alone] == [(["model-a"], why, None)] * 2
    assert pairwise_lines(alone) == [
        "Pairwise:",
        f"  2 comparisons skipped: {why}",
    ]

    # A judge that does not answer A, B or tie leaves the comparison unjudged (not a win, tie or loss).
    vague = ScriptedModel(["I like both."] * 2, name="judge")
    pairs = await Pairwise(suite, _judges(settings), vague, cost_at(settings)).compare(trials)
    assert [p.error for p in pairs] == ["the judge did not answer A, B or tie: 'I like both.'"] * 2
    assert pairwise_lines(pairs)[1] == (
        "  model-a vs model-b: 0 wins, 0 ties, 0 losses (2 not judged: the judge did not answer A, B or tie: "
        "'I like both.')"
    )
    # No judge named (in-process: the command refuses before the run), and the offline one.
    pairs = await Pairwise(suite.select(["tokyo"]), _judges(settings), None, cost_at(settings)).compare(trials)
    assert (
        pairs[0].skipped == "no judge: give --judge provider/name (or judge.model in the suite, or the check's model)"
    )
    pairs = await Pairwise(suite, _judges(settings), "offline", cost_at(settings)).compare(trials)
    assert pairs[0].skipped == "offline cannot judge (the offline stand-in); give --judge provider/name"
    # A turn one model could not play is not compared.
    broken = trials[1].model_copy(update={"turns": [TurnResult(index=1, action="user: …", error="no prompt")]})
    pairs = await Pairwise(suite, _judges(settings), vague, cost_at(settings)).compare([trials[0], broken])
    assert pairs[0].skipped == "model-b did not answer turn 1: it could not be played (no prompt)"
    assert pairs[1].skipped == "model-b did not answer turn 2: its trial ended before it (not played)"
    assert vague.remaining == 0


def test_no_model_to_judge_pairs_is_a_set_up_error() -> None:
    suite = parse_suite(SUITE)
    two = ["openai/a", "openai/b"]
    for judge in (None, "offline"):
        problem = unjudged(suite, judge, two) or ""
        assert problem.startswith("1 case(s) have pairwise: checks no model can judge (tokyo)"), problem
    assert unjudged(suite, "openai/judge", two) is None
    assert unjudged(suite, None, ["openai/a"]) is None, "one model: nothing to compare, nothing to judge"


async def test_the_judge_over_an_openai_endpoint(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.reply(json.dumps({"reason": "it names the time", "winner": "A"}))  # 12 prompt, 5 completion
    openai_server.reply(json.dumps({"reason": "it names the time", "winner": "B"}))  # the same answer, swapped
    provider = {"api_key": "sk-test", "base_url": openai_server.base_url}
    settings = load_settings(
        None,
        env={},
        user_config=tmp_path / "none.yaml",
        overrides={
            "model": {"max_retries": 0, "providers": {"openai": provider}},
            "budgets": {"prices": {"openai/fake-model": {"input": 2.0, "output": 8.0}}},
        },
    )
    suite = parse_suite(SUITE).select(["tokyo"])
    suite = suite.model_copy(update={"cases": [_first_turn(suite.cases[0])]})
    judges = _judges(settings)
    try:
        pairs = await Pairwise(suite, judges, "openai/fake-model", cost_at(settings)).compare(
            [_trial("model-a", 1), _trial("model-b", 1)]
        )
    finally:
        await judges.aclose()
    [pair] = pairs
    assert pair.judge == "openai/fake-model" and pair.winner == pair.verdicts[0].first
    assert pair.cost == pytest.approx(2 * (12 * 2.0 + 5 * 8.0) / 1e6), pair
    bodies = [r.body for r in openai_server.requests]
    assert [b["model"] for b in bodies] == ["fake-model", "fake-model"]
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert "<Rubric>\nsays what time it is in Tokyo\n</Rubric>" in bodies[0]["messages"][-1]["content"]


def _trial(label: str, attempt: int) -> TrialResult:
    answers = ANSWERS[label]
    turns = [TurnResult(index=n, action="user: …", answer=a) for n, a in enumerate(answers, 1)]
    return TrialResult(case="tokyo", model=label, attempt=attempt, passed=True, turns=turns)


def _first_turn(case: Case) -> Case:
    return case.model_copy(update={"turns": case.turns[:1]})
