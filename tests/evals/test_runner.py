"""The runner: several models side by side, repeats with a pass rate per case, trials at once, a budget that
stops the run, results saved (JSON and the store) and compared with the suite's last run, JUnit XML."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from agents.models.base import Model, ModelResponse
from agents.models.scripted import ScriptedModel, call
from bot.evals.models import ModelChoice, choose
from bot.evals.report import junit, report
from bot.evals.results import diff, previous_run, save_json
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.store import last_run, load_run, recent_runs, save_run
from bot.evals.suite import Case, parse_suite
from bot.gateway.app import Gateway
from bot.store.sql import open_store
from bot.store.sql.migrate import migrate_url
from bot.store.sql.repos.evals import SqlEvalRuns

SUITE = """
name: side-by-side
config: {routing: {strategy: rule}}
cases:
  - id: greets
    script: ["[offline model] hello"]
    turns: [{user: "@chat hello", expect: {answer: "[offline model]"}}]
  - id: the-time
    script:
      - {call: get_current_time, args: {timezone: Asia/Tokyo}, usage: {input_tokens: 1}}
      - {text: "[offline model] late", usage: {input_tokens: 1}}
    turns:
      - user: "@react what time is it in Tokyo?"
        expect: {tool: {name: get_current_time, args: {timezone: Asia/Tokyo}}}
"""


async def test_models_side_by_side_repeated_at_once(settings_source: Callable[..., SettingsSource]) -> None:
    attempts = itertools.count()

    def flaky(case: Case) -> Model:
        """Right every other time (a model whose answers vary)."""
        right = next(attempts) % 2 == 0
        if case.id == "greets":
            return ScriptedModel(["[offline model] hi" if right else "hi"], name="flaky")
        timezone = "Asia/Tokyo" if right else "Europe/Paris"
        return ScriptedModel([_call(timezone), "ok"], name="flaky")

    models = [choose("offline"), choose("scripted"), ModelChoice("flaky", make=flaky)]
    seen: list[str] = []
    options = EvalOptions(
        models=models, repeat=2, concurrency=3, on_trial=lambda t: seen.append(f"{t.case} {t.model} {t.attempt}")
    )
    result = await run_suite(parse_suite(SUITE), settings_source(), options, Path.cwd(), gateway=Gateway)
    assert len(result.trials) == len(seen) == 12 and result.models == ["offline", "scripted", "flaky"]
    # Progress in the run's order, whatever finished first: case, model, attempt.
    assert seen == [f"{c} {m} {a}" for c in ("greets", "the-time") for m in result.models for a in (1, 2)]
    by_model = result.by_model()
    assert (by_model["offline"].passed, by_model["scripted"].passed, by_model["flaky"].passed) == (4, 4, 2)
    assert {k: (v.passed, v.trials) for k, v in result.by_case().items() if k[1] == "flaky"} == {
        ("greets", "flaky"): (1, 2),
        ("the-time", "flaky"): (1, 2),
    }
    text = report(result)
    assert "✗ greets [flaky]: 1/2 passed," in text and "✓ the-time [offline]: 2/2 passed," in text
    assert "Suite side-by-side: 2 cases × offline, scripted, flaky, repeated 2× — 10/12 passed (83%)" in text
    assert "flaky: 2/4 passed (50%)" in text


def _call(timezone: str) -> ModelResponse:
    return call("get_current_time", {"timezone": timezone})


async def test_a_budget_stops_the_run(settings_source: Callable[..., SettingsSource]) -> None:
    dollar_a_token = {"scripted": {"input": 1_000_000, "output": 1_000_000}}
    more = SUITE.split("cases:")[1].replace("- id: ", "- id: more-")
    suite = parse_suite(SUITE + more)
    options = EvalOptions(models=[choose("scripted")], budget=1.5, concurrency=1)
    result = await run_suite(
        suite, settings_source(budgets={"prices": dollar_a_token}), options, Path.cwd(), gateway=Gateway
    )
    ran = [t for t in result.trials if not t.skipped]
    assert [t.cost for t in ran] == [0.0, 2.0], "the first case costs nothing; the second two tokens"
    assert result.stopped == "the budget of $1.5 was reached ($2.0000 spent)"
    assert [t.skipped for t in result.trials[2:]] == [result.stopped] * 2
    assert result.totals.skipped == 2 and result.pass_rate == 0.5 and result.summary()["status"] == "stopped"
    suites = ET.fromstring(junit(result)).findall("testsuite")
    assert [(s.get("tests"), s.get("failures"), s.get("skipped")) for s in suites] == [("4", "0", "2")]
    assert "Stopped: the budget of $1.5 was reached ($2.0000 spent); 2 trials not run." in report(result)


async def test_results_are_kept_and_compared_with_the_last_run(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    source = settings_source()
    suite = parse_suite(SUITE)
    first = await run_suite(suite, source, EvalOptions(models=[choose("scripted")]), Path.cwd(), gateway=Gateway)
    worse = suite.model_copy(
        update={"cases": [suite.cases[0], suite.cases[1].model_copy(update={"script": suite.cases[0].script})]}
    )
    second = await run_suite(worse, source, EvalOptions(models=[choose("scripted")]), Path.cwd(), gateway=Gateway)
    folder = tmp_path / "evals"
    save_json(first, folder)
    path = save_json(second, folder)
    assert path.name.startswith("side-by-side-") and previous_run(folder, "side-by-side", second) == first
    changes = diff(first, second)
    assert changes[0] == "the-time [scripted]: passed → failed"
    assert changes[1].startswith("scripted: pass rate 100% → 50%, cost $0.0000 → $0.0000, tokens 2 → ")
    assert "Since the last run: \n  the-time [scripted]: passed → failed" in report(second, changes)

    url = f"sqlite:///{tmp_path / 'bot.db'}"
    await migrate_url(url)
    store = open_store(url)
    await store.start()
    try:
        await save_run(SqlEvalRuns(store), first)
        await save_run(SqlEvalRuns(store), second)
        lines = await recent_runs(SqlEvalRuns(store), "side-by-side")
        assert [(r.id, r.status, r.passed, r.trials, r.pass_rate) for r in lines] == [
            (second.id, "failed", 1, 2, 0.5),
            (first.id, "passed", 2, 2, 1.0),
        ]
        assert await last_run(SqlEvalRuns(store), "side-by-side", second) == first
        loaded = await load_run(SqlEvalRuns(store), second.id)
        assert loaded is not None and loaded.trials[1].events and loaded.trials[1].failures()
    finally:
        await store.close()
