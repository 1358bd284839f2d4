"""Side by side: a run's models case by case and two runs of a suite, attempt by attempt, with the first differing
step, regressions and improvements; ``bot eval --compare`` in text and JSON, and its exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from typer.testing import CliRunner

from agents.models.base import Model
from agents.models.scripted import ScriptedModel, Step, call
from bot.cli.main import app
from bot.evals.compare import compare_models, compare_runs, pair, text
from bot.evals.models import ModelChoice
from bot.evals.results import CheckResult, RunResult, ToolSeen, TrialResult, TurnResult, save_json
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import Case, parse_suite
from bot.gateway.app import Gateway

SUITE = """
name: support
config: {routing: {strategy: rule}}
cases:
  - id: greets
    turns: [{user: "@chat hi", expect: {answer: Hello}}]
  - id: the-time
    turns:
      - user: "@react what time is it in Tokyo?"
        expect: {tool: {name: get_current_time, args: {timezone: Asia/Tokyo}}}
  - id: fixed
    turns: [{user: "@chat say done", expect: {answer: done}}]
"""

TOKYO = call("get_current_time", {"timezone": "Asia/Tokyo"})
PARIS = call("get_current_time", {"timezone": "Europe/Paris"})
SCRIPTS: dict[str, dict[str, list[Step]]] = {
    "model-a": {"greets": ["Hello!"], "the-time": [TOKYO, "It is late in Tokyo."], "fixed": ["not yet"]},
    "model-b": {"greets": ["Hello there!"], "the-time": [PARIS, "It is late in Paris."], "fixed": ["done"]},
}


def playing(label: str) -> ModelChoice:
    """A model that answers each case with its own script (two of these are two models side by side)."""

    def make(case: Case) -> Model:
        return ScriptedModel(SCRIPTS[label][case.id], name=label)

    return ModelChoice(label, make=make)


async def test_a_runs_models_side_by_side(settings_source: Callable[..., SettingsSource]) -> None:
    options = EvalOptions(models=[playing("model-a"), playing("model-b")], concurrency=3)
    run = await run_suite(parse_suite(SUITE), settings_source(), options, Path.cwd(), gateway=Gateway)
    comparison = compare_models(run)
    assert comparison.baseline == "model-a"
    changes = {row.case: row.change for row in comparison.rows}
    assert changes == {"greets": "changed", "the-time": "regression", "fixed": "improvement"}
    time = next(r for r in comparison.rows if r.case == "the-time")
    first = time.pairs[0].first
    assert first is not None and (first.turn, first.field) == (1, "tools")
    assert first.left == 'get_current_time(timezone="Asia/Tokyo")'
    assert first.right == 'get_current_time(timezone="Europe/Paris")'
    step = time.pairs[0].turns[0]
    assert step.left is not None and step.right is not None and step.left.agent == step.right.agent == "react"
    assert step.differs == ["tools", "answer"] and step.right.answer == "It is late in Paris."
    assert step.right.failed and step.right.failed[0].startswith("tool: expected get_current_time")
    greets = next(r for r in comparison.rows if r.case == "greets").pairs[0].first
    assert greets is not None and (greets.field, greets.left, greets.right) == ("answer", "Hello!", "Hello there!")

    said = text(comparison).splitlines()
    assert said[0] == f"Side by side: suite support, run {run.id[-8:]}: model-a (baseline) vs model-b"
    order = [n for n, line in enumerate(said) if line.endswith("):") and not line.startswith(" ")]
    assert [said[n].split(" (")[0] for n in order] == ["Regressions", "Improvements", "Changed behaviour, same outcome"]
    assert said[order[0] + 1].startswith("  ✓→✗ the-time [model-a → model-b]: passed → failed; $")
    assert said[order[0] + 2] == (
        '    turn 1 (user: @react what time is it in Tokyo?): tool calls: get_current_time(timezone="Asia/Tokyo") '
        '→ get_current_time(timezone="Europe/Paris")'
    )
    assert said[order[0] + 3].startswith("        turn 1 (user: @react what time is it in Tokyo?): tool: expected")
    assert said[order[1] + 1].startswith("  ✗→✓ fixed [model-a → model-b]: failed → passed")
    assert "answer: Hello! → Hello there!" in said[order[2] + 2]
    assert said[-1] == (
        "Summary: 1 regression(s), 1 improvement(s), 1 changed, 0 unchanged; passed: model-a 2/3, model-b 2/3"
    )


def _trial(case: str, model: str, attempt: int, passed: bool, *turns: TurnResult) -> TrialResult:
    return TrialResult(case=case, model=model, attempt=attempt, passed=passed, turns=list(turns))


def _run(run_id: str, trials: list[TrialResult], minutes: int = 0) -> RunResult:
    started = datetime(2026, 3, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    models = list(dict.fromkeys(t.model for t in trials))
    return RunResult(id=run_id, suite="support", started_at=started, models=models, trials=trials)


def test_repeats_are_compared_attempt_by_attempt() -> None:
    ok = TurnResult(index=1, action="user: hi", agent="chat", answer="Hello", status="done")
    bad = ok.model_copy(
        update={"answer": "Bye", "checks": [CheckResult(check="answer", expected="Hello", passed=False)]}
    )
    before = _run("a" * 32, [_trial("greets", "m", n, True, ok) for n in (1, 2, 3)])
    after = _run("b" * 32, [_trial("greets", "m", 1, True, ok), _trial("greets", "m", 2, False, bad)], minutes=5)
    after.trials.append(_trial("greets", "m", 3, False, bad))
    row = compare_runs(before, after).rows[0]
    assert (row.change, row.counts) == ("regression", "3/3 → 1/3")
    assert [p.change for p in row.pairs] == ["same", "regression", "regression"]
    said = text(compare_runs(before, after))
    assert "  ✓→✗ greets [m]: 3/3 → 1/3" in said and "    #2 ✓→✗ turn 1 (user: hi): answer: Hello → Bye" in said
    assert said.splitlines()[-1].endswith("passed: run aaaaaaaa 3/3, run bbbbbbbb 1/3")
    # The same passes in another order is a change, not a regression.
    swapped = _run("c" * 32, [_trial("greets", "m", 1, False, bad), _trial("greets", "m", 2, True, ok)])
    flaky = _run("d" * 32, [_trial("greets", "m", 1, True, ok), _trial("greets", "m", 2, False, bad)])
    assert compare_runs(flaky, swapped).rows[0].change == "changed"


def test_the_first_differing_step() -> None:
    asked = TurnResult(index=1, action="user: write it", agent="react", interrupts=["tool_confirm"], status="waiting")
    wrote = TurnResult(index=2, action="press: Approve", agent="react", tools=[ToolSeen(name="write_file")])
    skipped = asked.model_copy(update={"interrupts": [], "status": "done", "tools": [ToolSeen(name="write_file")]})
    first = pair("w", 1, _trial("w", "a", 1, True, asked, wrote), _trial("w", "b", 1, False, skipped)).first
    assert first is not None and (first.field, first.left, first.right) == ("tools", "no tool", "write_file()")
    handed = asked.model_copy(update={"handoffs": ["triage → billing"]})
    first = pair("w", 1, _trial("w", "a", 1, True, asked), _trial("w", "b", 1, True, handed)).first
    assert first is not None and first.line() == "turn 1 (user: write it): handoff: none → triage → billing"
    other = asked.model_copy(update={"agent": "chat"})
    row = pair("w", 1, _trial("w", "a", 1, True, asked, wrote), _trial("w", "b", 1, False, other))
    assert row.first is not None and (row.first.field, row.first.right) == ("agent", "chat")
    assert row.turns[1].differs == ["turn"] and row.turns[1].right is None  # b stopped after turn 1
    same = pair("w", 1, _trial("w", "a", 1, True, asked), _trial("w", "b", 1, True, asked))
    assert (same.change, same.first) == ("same", None)
    # A run saved before side by side existed loads and compares (nothing it lacks is required).
    old = json.loads(_run("e" * 32, [_trial("w", "a", 1, True, asked)]).model_dump_json())
    for turn in old["trials"][0]["turns"]:
        for key in ("tools", "interrupts", "handoffs", "latency_ms", "cost", "cached_tokens"):
            turn.pop(key)
    assert compare_runs(RunResult.model_validate(old), RunResult.model_validate(old)).rows[0].change == "same"


def test_compare_command(tmp_path: Path) -> None:
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "data")}}))
    folder = tmp_path / "data" / "evals"
    ok = TurnResult(index=1, action="user: hi", agent="chat", answer="Hello", status="done")
    bad = ok.model_copy(update={"answer": "Bye"})
    first = _run("1" * 24 + "aaaa1111", [_trial("greets", "m", 1, True, ok)])
    both = [_trial("greets", "m", 1, False, bad), _trial("greets", "n", 1, True, ok)]
    second = _run("2" * 24 + "bbbb2222", both, minutes=5)
    save_json(first, folder), save_json(second, folder)

    def bot_eval(*args: str) -> tuple[int, str]:
        done = CliRunner().invoke(app, ["eval", *args, "-c", str(config)])
        return done.exit_code, done.output

    code, out = bot_eval("--compare", "previous", "last")
    assert code == 0, out
    assert out.splitlines()[0] == "Side by side: suite support: run aaaa1111 (baseline) → run bbbb2222"
    assert "  ✓→✗ greets [m]: passed → failed" in out and "answer: Hello → Bye" in out
    assert "Not in both (1): compared on the cases both ran\n  – only in run bbbb2222 (1): greets [n]" in out
    code, out = bot_eval("--compare", "aaaa1111")  # one model: with the run before it (none)
    assert code == 2 and "no earlier run of suite support" in out
    code, out = bot_eval("--compare", "bbbb2222", "--json")  # two models: side by side
    data = json.loads(out)
    assert code == 0 and data["kind"] == "models" and data["baseline"] == "m"
    assert [(r["case"], r["right_model"], r["change"]) for r in data["rows"]] == [("greets", "n", "improvement")]
    assert data["rows"][0]["pairs"][0]["first"]["field"] == "answer"
    code, out = bot_eval("--compare", "aaaa1112", "last")
    assert code == 2 and "no saved run has that id (did you mean aaaa1111" in out
