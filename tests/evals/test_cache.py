"""The response cache and cassettes against the fake OpenAI-compatible endpoint: a rerun of an unchanged suite
asks the endpoint nothing and finds the same; a changed turn asks again for that case alone; repeats and
``--no-cache`` ask again; a cassette replays with no endpoint and no key, and a request it lacks is an error
naming the case, turn and model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.messages import Message
from agents.models.base import Generation
from bot.evals.answers import Cassette, CassetteError
from bot.evals.cache import RunCache
from bot.evals.models import choose
from bot.evals.report import junit, report
from bot.evals.results import RunResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.suite import parse_suite
from bot.gateway.app import Gateway
from tests.evals.cli import bot_eval
from tests.fakes.openai_server import FakeOpenAI

SUITE = """
name: cached
config: {routing: {strategy: rule}}
cases:
  - id: time-in-paris
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          tool: {name: get_current_time, args: {timezone: Europe/Paris}}
          answer: noon
          judge: says what time it is in Paris
  - id: hello
    config: {routing: {strategy: llm}}
    turns:
      - user: hello there
        expect: {agent: chat, answer: Hello}
"""
PRICES = {"fake-model": {"input": 2.0, "output": 8.0}}
KEY = "sk-test-cache-0123456789abcdef"
MODEL = "openai/fake-model"


def script_suite(server: FakeOpenAI) -> None:
    """The endpoint's answers to :data:`SUITE`, in the order a run with ``-j 1`` asks."""
    server.call("get_current_time", {"timezone": "Europe/Paris"})
    server.reply("It is noon in Paris.")
    server.reply(json.dumps({"reason": "it says noon", "pass": True, "score": 0.9}))  # the judge
    server.call("transfer_to_chat", {})  # the router
    server.reply(f"Hello! (the key is {KEY})")  # a secret the cassette must not keep


def source_for(settings_source: Callable[..., SettingsSource], base_url: str | None, key: str | None) -> Any:
    openai = {k: v for k, v in {"api_key": key, "base_url": base_url}.items() if v}
    return settings_source(
        model={"max_retries": 0, "providers": {"openai": openai}},
        budgets={"prices": PRICES},
        routing={"rule": {"meaning": False, "learned": False}},  # no sentence encoder to load: routed by @name or model
    )


async def run(source: SettingsSource, suite: str = SUITE, **options: Any) -> RunResult:
    chosen = EvalOptions(models=[choose(MODEL)], concurrency=1, **options)
    return await run_suite(parse_suite(suite), source, chosen, Path.cwd(), gateway=Gateway)


def seen(result: RunResult) -> list[tuple[Any, ...]]:
    """What a run found, apart from what the cache changes (time, cost)."""
    return [
        (t.case, t.attempt, t.passed, [(u.agent, u.answer, [x.name for x in u.tools], u.model_calls) for u in t.turns])
        for t in result.trials
    ]


async def test_a_rerun_asks_the_endpoint_nothing_and_a_changed_turn_asks_for_its_case(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource]
) -> None:
    script_suite(openai_server)
    source = source_for(settings_source, openai_server.base_url, KEY)
    first = await run(source, cache=True)
    assert [t.passed for t in first.trials] == [True, True], [t.failures() for t in first.trials]
    assert len(openai_server.requests) == 5
    totals = first.by_model()[MODEL]
    assert (totals.model_calls, totals.cached_calls, totals.judge_cached) == (4, 0, 0) and totals.cost > 0

    second = await run(source, cache=True, budget=totals.cost / 2)  # what is cached costs nothing of the budget
    assert len(openai_server.requests) == 5, "the rerun asked the endpoint"
    assert seen(second) == seen(first)
    again = second.by_model()[MODEL]
    assert (again.model_calls, again.cached_calls, again.judge_cached, again.cost) == (4, 4, 1, 0.0)
    assert (again.input_tokens, again.output_tokens) == (totals.input_tokens, totals.output_tokens)
    [judged] = [c for c in second.trials[0].turns[0].checks if c.check == "judge"]
    assert judged.judge is not None and judged.judge.cached and judged.passed
    assert f"{MODEL}: 2/2 passed (100%), 5/5 checks, 4 model calls (4 from cache)" in report(second)
    assert "1 judge calls from cache" in report(second)

    openai_server.call("transfer_to_chat", {})
    openai_server.reply("Hello again!")
    third = await run(source, SUITE.replace("hello there", "hello there!"), cache=True)
    assert len(openai_server.requests) == 7, "only the changed case asked (its router and agent)"
    assert [(t.case, t.passed, sum(u.cached_calls for u in t.turns)) for t in third.trials] == [
        ("time-in-paris", True, 2),
        ("hello", True, 0),
    ]


async def test_repeats_are_answered_apart_and_no_cache_asks_again(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource]
) -> None:
    suite = "name: repeated\ncases:\n  - id: hi\n    turns:\n      - user: '@chat hi'\n        expect: {answer: Hi}\n"
    for text in ("Hi one", "Hi two", "Hi three", "Hi four"):
        openai_server.reply(text)
    source = source_for(settings_source, openai_server.base_url, KEY)
    first = await run(source, suite, repeat=2, cache=True)
    second = await run(source, suite, repeat=2, cache=True)
    assert len(openai_server.requests) == 2
    assert [t.turns[0].answer for t in first.trials] == ["Hi one", "Hi two"]
    assert [t.turns[0].answer for t in second.trials] == ["Hi one", "Hi two"], "each attempt its own answer"
    uncached = await run(source, suite, repeat=2, cache=False)
    assert len(openai_server.requests) == 4
    assert [t.turns[0].answer for t in uncached.trials] == ["Hi three", "Hi four"]
    assert uncached.by_model()[MODEL].cached_calls == 0


def test_the_same_request_twice_in_a_trial_has_two_keys(tmp_path: Path) -> None:
    cache = RunCache(None)
    body = {"messages": [Message.user("hi").model_dump(mode="json")]}
    one, other = cache.trial("c", MODEL, 1, tmp_path), cache.trial("c", MODEL, 1, tmp_path / "elsewhere")
    keys = [one.key(MODEL, Generation(), "chat", body) for _ in range(2)]
    assert keys[0] != keys[1]
    assert [other.key(MODEL, Generation(), "chat", body) for _ in range(2)] == keys, "the same in another trial"
    assert cache.trial("c", MODEL, 2, tmp_path).key(MODEL, Generation(), "chat", body) not in keys
    assert one.key(MODEL, Generation(temperature=0.5), "chat", body) not in keys


async def test_a_cassette_replays_with_no_endpoint_and_no_key(
    openai_server: FakeOpenAI, settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    script_suite(openai_server)
    recorded = Cassette()
    first = await run(source_for(settings_source, openai_server.base_url, KEY), record=recorded)
    assert [t.passed for t in first.trials] == [True, True], [t.failures() for t in first.trials]
    path = tmp_path / "run.cassette.jsonl"
    recorded.write(path)
    text = path.read_text()
    assert len(text.splitlines()) == 1 + 5 and json.loads(text.splitlines()[0])["version"] == 1
    assert KEY not in text and "authorization" not in text.lower() and "noon in Paris" in text

    keyless = source_for(settings_source, None, None)  # no key, no endpoint: preflight lets a replay through
    replayed = await run(keyless, replay=Cassette.load(path))
    assert len(openai_server.requests) == 5
    assert [t.passed for t in replayed.trials] == [True, True], [t.failures() for t in replayed.trials]
    assert replayed.by_model()[MODEL].cached_calls == 4

    changed = await run(keyless, SUITE.replace("hello there", "good morning"), replay=Cassette.load(path))
    hello = changed.trials[1]
    assert changed.trials[0].passed and not hello.passed
    assert hello.errored is not None and hello.errored.startswith(
        f"turn 1: not in the cassette: case hello, turn 1, model {MODEL}"
    )
    assert "record again with --record" in hello.errored
    assert 'errors="1"' in junit(changed)


def test_a_cassette_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no such file"):
        Cassette.load(tmp_path / "none.jsonl")
    (tmp_path / "old.jsonl").write_text('{"format": "bot-eval-cassette", "version": 0}\n')
    with pytest.raises(CassetteError, match="cassette version 0"):
        Cassette.load(tmp_path / "old.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"format": "bot-eval-cassette", "version": 1}\n{"key": "k"}\n')
    with pytest.raises(CassetteError, match="line 2: not an answer"):
        Cassette.load(tmp_path / "bad.jsonl")


def test_record_and_replay_together_exit_2_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expect: {answer: hi}\n"
    )
    done = bot_eval(tmp_path, str(tmp_path / "suite.yaml"), "--record", "a.jsonl", "--replay", "b.jsonl")
    assert done.returncode == 2, done.stderr
    assert "--record and --replay together" in done.stderr
