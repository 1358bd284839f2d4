"""Exact replays from traces (issue 63): a conversation routed by a model replays with every model call in its
script (the router's transfer first), passes against the answers it was recorded with, and against another model
fails only at the first real difference: later turns are still played and checked."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from agents.models.offline import OfflineModel
from agents.models.scripted import ScriptedModel, call
from bot.evals.models import ModelChoice, choose
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.traces import TraceCases
from bot.gateway.app import Gateway

SINCE = datetime(2000, 1, 1)
LLM = {"strategy": "llm"}
RECORDED = [
    call("transfer_to_react", {"reason": "a tool"}, id="r1"),
    call("get_current_time", {"timezone": "Europe/Paris"}, id="t1"),
    "It is noon in Paris.",
    call("transfer_to_react", {}, id="r2"),
    call("write_file", {"path": "a.txt", "content": "hi"}, id="w1"),
    "I wrote hi to a.txt.",
    call("transfer_to_chat", {}, id="r3"),
    "Hello! How can I help you today?",
]


async def record(make_harness: Any) -> Any:
    h = await make_harness(ScriptedModel(list(RECORDED)), routing=LLM)
    await h.say("what time is it in Paris?")
    await h.say("write hi to a.txt")
    await h.click("Approve")
    await h.say("hello there")
    await h.gateway.tracing.flush()
    return h


async def test_a_model_routed_conversation_replays_exactly_and_another_model_fails_only_where_it_differs(
    make_harness: Any, settings_source: Callable[..., SettingsSource]
) -> None:
    h = await record(make_harness)
    suite = await TraceCases(h.gateway.repos.traces, h.gateway.repos.replay).suite(SINCE)
    assert suite is not None
    [case] = suite.cases
    assert [t.user or f"choice {t.choice}" for t in case.turns] == [
        "what time is it in Paris?",
        "write hi to a.txt",
        "choice a",
        "hello there",
    ]
    assert case.script is not None
    steps = [s.call or (s.calls[0].name if s.calls else None) or s.text for s in case.script]
    assert steps == [
        "transfer_to_react",
        "get_current_time",
        "It is noon in Paris.",
        "transfer_to_react",
        "write_file",
        "I wrote hi to a.txt.",
        "transfer_to_chat",
        "Hello! How can I help you today?",
    ], "every model call, the router's included, in the order the model was asked"
    answers = [t.expect.answer for t in case.turns]
    assert [a.similar if a else None for a in answers] == [
        ["It is noon in Paris."],
        None,  # paused for the approval: its prompt is not the model's answer
        ["I wrote hi to a.txt."],
        ["Hello! How can I help you today?"],
    ]

    source = settings_source(routing=LLM)
    replayed = await run_suite(suite, source, EvalOptions(models=[choose("scripted")]), Path.cwd(), gateway=Gateway)
    [trial] = replayed.trials
    assert trial.passed, trial.failures()
    checked = [[c.check for c in t.checks if c.check == "answer"] for t in trial.turns]
    assert checked == [["answer"], [], ["answer"], ["answer"]], "the answers checked by meaning"
    assert sum(t.model_calls for t in trial.turns) == len(RECORDED)

    # Another model writes b.txt: the turn that approves the write fails, and the conversation goes on.
    other = [*RECORDED[:4], call("write_file", {"path": "b.txt", "content": "hi"}, id="w1"), *RECORDED[5:]]
    changed = ModelChoice("other", make=lambda _case: ScriptedModel(list(other)))
    diverged = await run_suite(suite, source, EvalOptions(models=[changed]), Path.cwd(), gateway=Gateway)
    [trial] = diverged.trials
    assert trial.failures() == [
        'turn 3 (choice: a): tool: expected write_file exact {"content": "hi", "path": "a.txt"} ×1; '
        'saw write_file(path="b.txt", content="hi")'
    ]
    assert trial.turns[3].checks and all(c.passed for c in trial.turns[3].checks), "the next request still checked"


async def test_a_chat_idle_longer_than_the_gap_is_two_cases_the_second_with_the_history_before_it(
    make_harness: Any, settings_source: Callable[..., SettingsSource]
) -> None:
    h = await record(make_harness)
    suite = await TraceCases(h.gateway.repos.traces, h.gateway.repos.replay, gap=0.0).suite(SINCE)
    assert suite is not None
    assert [len(c.turns) for c in suite.cases] == [1, 2, 1], "one case per conversation"
    first, second, third = suite.cases
    assert not first.history
    texts = [m.get("text") for m in third.history]
    assert "what time is it in Paris?" in texts and "I wrote hi to a.txt." in texts
    assert "hello there" not in texts, "only what came before the conversation"
    replayed = await run_suite(
        suite, settings_source(routing=LLM), EvalOptions(models=[choose("scripted")]), Path.cwd(), gateway=Gateway
    )
    assert [t.passed for t in replayed.trials] == [True, True, True], [t.failures() for t in replayed.trials]


async def test_a_plan_and_every_other_model_call_is_in_the_script(
    make_harness: Any, settings_source: Callable[..., SettingsSource]
) -> None:
    """The planner's JSON, each step's answer, the re-plans: traces keep every answer, so a conversation whose
    answers the history does not hold replays too."""
    h = await make_harness(OfflineModel(), routing={"strategy": "hybrid"})
    await h.say("plan a weekend trip to Paris")
    await h.click("Approve")
    await h.say("remember that my favourite colour is blue")
    await h.gateway.tracing.flush()
    maker = TraceCases(h.gateway.repos.traces, h.gateway.repos.replay)
    suite = await maker.suite(SINCE)
    assert suite is not None and maker.notes == []
    [case] = suite.cases
    assert case.script is not None and case.script[0].json_value is not None, "the plan first"
    approved = case.turns[1].expect.answer
    assert approved is not None and approved.similar[0].startswith("[offline model] The plan for a weekend trip")
    replayed = await run_suite(
        suite,
        settings_source(routing={"strategy": "hybrid"}),
        EvalOptions(models=[choose("scripted")]),
        Path.cwd(),
        gateway=Gateway,
    )
    [trial] = replayed.trials
    assert trial.passed, trial.failures()
