"""Recorded conversations made into cases: replayed with the same scripted model they reproduce the routing and
the tool calls exactly (pauses answered as they were: a press, a text answer); with a changed model the check
that fails is where behaviour changed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from agents.models.base import Model
from agents.models.scripted import ScriptedModel, call
from bot.evals.models import ModelChoice, choose
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import Case, load_suite
from bot.evals.traces import TraceCases, seconds_of
from bot.gateway.app import Gateway
from bot.tracing.recorder import Redactor

ROOT = Path(__file__).resolve().parents[2]
SINCE = datetime(2000, 1, 1)
TIME = [call("get_current_time", {"timezone": "Europe/Paris"}, id="t1"), "It is noon in Paris."]
WRITE = [call("write_file", {"path": "a.txt", "content": "hi"}, id="w1"), "Written."]
KEY = "sk-live-0123456789abcdef"
ASK = [call("ask_user", {"question": "Which colour?", "choices": ["red", "blue"]}, id="q1"), "Blue."]


async def record(make_harness: Any) -> Any:
    """A chat with a tool call, an approved confirmation and a question answered in text; another chat."""
    h = await make_harness(ScriptedModel([*TIME, *WRITE, *ASK, "Hi!"]))
    await h.say(f"@react what time is it in Paris? my key is {KEY}")
    await h.say("@react write hi to a.txt")
    await h.click("Approve")
    await h.say("@react paint it")
    await h.say("blue")
    await h.say("@chat hello", chat=h.chat("c2"))
    await h.gateway.tracing.flush()
    return h


async def test_a_recorded_conversation_replays_exactly_with_the_same_model(
    make_harness: Any, settings_source: Callable[..., SettingsSource]
) -> None:
    h = await record(make_harness)
    maker = TraceCases(h.gateway.repos.traces, h.gateway.repos.replay, Redactor([KEY]))
    suite = await maker.suite(SINCE)
    assert suite is not None and maker.notes == []
    first, second = suite.cases
    said = [t.user or f"choice {t.choice}" for t in first.turns]
    assert said[0].startswith("@react what time is it in Paris? my key is ") and KEY not in said[0]
    assert said[1:] == [
        "@react write hi to a.txt",
        "choice a",
        "@react paint it",
        "blue",
    ]
    timed, asked_to_write, approved, painted, answered = (t.expect for t in first.turns)
    assert timed.agent == "react" and timed.exact_tools and timed.status == "done"
    assert [(t.name, t.args, t.match, t.times) for t in timed.tool] == [
        ("get_current_time", {"timezone": "Europe/Paris"}, "exact", 1)
    ]
    assert asked_to_write.interrupt is not None and asked_to_write.interrupt is not False
    assert asked_to_write.interrupt.kind == "tool_confirm" and asked_to_write.no_tool is True
    assert [t.name for t in approved.tool] == ["write_file"] and approved.status == "done"
    assert painted.interrupt is not False and painted.interrupt is not None and painted.interrupt.kind == "ask_user"
    assert answered.status == "done" and answered.handoff is False
    assert second.turns[0].user == "@chat hello" and second.turns[0].expect.agent == "chat"
    assert first.script is not None and len(first.script) == 6, "the model's answers, from the history"

    recorded = {first.id: [*TIME, *WRITE, *ASK], second.id: ["Hi!"]}

    def same(case: Case) -> Model:
        return ScriptedModel(recorded[case.id])

    replayed = await run_suite(
        suite, settings_source(), EvalOptions(models=[ModelChoice("scripted", make=same)]), Path.cwd(), gateway=Gateway
    )
    assert [t.passed for t in replayed.trials] == [True, True], [t.failures() for t in replayed.trials]
    from_history = await run_suite(
        suite, settings_source(), EvalOptions(models=[choose("scripted")]), Path.cwd(), gateway=Gateway
    )
    assert [t.passed for t in from_history.trials] == [True, True], [t.failures() for t in from_history.trials]

    changed = {
        first.id: [call("get_current_time", {"timezone": "Asia/Tokyo"}), *TIME[1:], *WRITE, *ASK],
        second.id: [call("remember", {"fact": "says hello"}), "Hi!"],
    }
    diverged = await run_suite(
        suite,
        settings_source(),
        EvalOptions(models=[ModelChoice("changed", make=lambda case: ScriptedModel(changed[case.id]))]),
        Path.cwd(),
        gateway=Gateway,
    )
    paris, hello = diverged.trials
    where = f"turn 1 (user: {said[0]})"
    assert paris.failures() == [
        f'{where}: tool: expected get_current_time exact {{"timezone": "Europe/Paris"}} ×1; '
        'saw get_current_time(timezone="Asia/Tokyo")'
    ]
    assert hello.failures() == [
        'turn 1 (user: @chat hello): no_tool: expected no tool call; saw remember(fact="says hello")'
    ]


async def test_only_the_conversations_of_an_agent(make_harness: Any) -> None:
    h = await record(make_harness)
    suite = await TraceCases(h.gateway.repos.traces, h.gateway.repos.replay).suite(SINCE, agent="chat")
    assert suite is not None and suite.name == "traces-chat"
    assert [c.turns[0].user for c in suite.cases] == ["@chat hello"]
    assert await TraceCases(h.gateway.repos.traces, h.gateway.repos.replay).suite(SINCE, agent="nobody") is None
    assert seconds_of("7d") == 7 * 86400 and seconds_of("30m") == 1800


async def test_bot_eval_from_traces_at_the_command_line(make_harness: Any, tmp_path: Path) -> None:
    h = await record(make_harness)
    data = Path(h.gateway.settings.store.data_dir)
    config = tmp_path / "bot.yaml"
    settings = {
        "store": {"data_dir": str(data)},
        "agents": {"dirs": []},
        "memory": {"summary": {"model": "extractive"}},
    }
    config.write_text(yaml.safe_dump({**settings, "routing": {"strategy": "rule", "rule": {"learned": False}}}))
    command = [sys.executable, "-m", "bot", "eval", "--from-traces", "--since", "1h", "--agent", "react"]
    command += ["--model", "scripted", "--write", str(tmp_path / "cases.yaml"), "--no-store", "-c", str(config)]
    env = {**os.environ, "OPENAI_API_KEY": KEY}  # a configured secret: redacted
    done = await asyncio.to_thread(
        subprocess.run, command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 conversations made into cases" in done.stderr
    assert "Suite traces-react: 1 cases × scripted — 1/1 passed (100%)" in done.stdout
    written = load_suite(tmp_path / "cases.yaml")
    said = [t.user or t.choice for t in written.cases[0].turns]
    assert said[0] and said[0].startswith("@react what time is it in Paris? my key is ") and KEY not in said[0]
    assert said[1:3] == ["@react write hi to a.txt", "a"]
    assert list((data / "evals").glob("traces-react-*.json"))
