"""Prometheus metrics through a real flow: a Telegram chat (real aiogram against the fake Bot API) asks for a
tool that needs confirmation, a 429 on the way, the confirmation pressed, the tool run; ``/metrics`` scraped
over HTTP at each step and parsed with prometheus_client's parser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agents.models.base import Usage
from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from tests.helpers.telegram import ALICE, Env, approve, started


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(gateway: Gateway, token: str | None = None) -> tuple[int, str]:
    assert gateway.http is not None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{gateway.http.port}/metrics", headers=headers) as response,
    ):
        return response.status, await response.text()


def parse(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


async def metrics(gateway: Gateway) -> Samples:
    status, text = await scrape(gateway)
    assert status == 200
    return parse(text)


async def test_metrics_move_through_a_telegram_flow(env: Env) -> None:
    settings = env.configure(http=True)
    used = Usage(input_tokens=120, output_tokens=30, thinking_tokens=10, cached_tokens=20)
    model = ScriptedModel(
        [call("delete_cache", {"path": "/tmp/build"}).model_copy(update={"usage": used}), "Deleted /tmp/build."]
    )
    gateway = Gateway(settings, model=model, tools=env.tools())  # its own adapters: 429s are reported
    await gateway.start()
    env.running.append(gateway)

    before = await metrics(gateway)
    assert value(before, "bot_messages_received_total") == 0
    assert value(before, "bot_queue_depth", partition="0") == 0

    env.fake.fail("sendMessage", retry_after=1)  # flood control once: waited out and sent again
    env.fake.push(env.fake.message("@react delete the build cache"))
    _ref, buttons = await env.prompt()
    mid = await metrics(gateway)
    assert value(mid, "bot_messages_received_total", channel="telegram", kind="message") == 1
    assert value(mid, "bot_ack_seconds_count", channel="telegram") == 1
    assert value(mid, "bot_routing_decisions_total", agent="react") == 1
    assert value(mid, "bot_interrupts_total", kind="tool_confirm", event="raised") == 1
    assert value(mid, "bot_interrupts_pending") == 1
    assert value(mid, "bot_run_seconds_count", outcome="paused") == 1
    assert value(mid, "bot_platform_rate_limited_total", channel="telegram") == 1
    assert value(mid, "bot_model_calls_total", provider="injected", outcome="ok") == 1
    assert value(mid, "bot_model_tokens_total", kind="input") == 120
    assert value(mid, "bot_model_tokens_total", kind="output") == 30
    assert value(mid, "bot_model_tokens_total", kind="thinking") == 10
    assert value(mid, "bot_model_tokens_total", kind="cached") == 20
    assert value(mid, "bot_store_commit_seconds_count", dialect="sqlite") > 0

    env.fake.push(env.fake.press(_ref, approve(buttons)))
    await env.reply("Deleted /tmp/build.")
    await gateway.settled()
    await gateway.store.flush()  # the reply's "sent" mark is written after the send, unawaited
    after = await metrics(gateway)
    assert env.runs == ["/tmp/build"]
    assert value(after, "bot_messages_received_total", channel="telegram", kind="action") == 1
    assert value(after, "bot_interrupts_total", kind="tool_confirm", event="resolved") == 1
    assert value(after, "bot_interrupts_pending") == 0
    assert value(after, "bot_tool_calls_total", tool="delete_cache", outcome="ok") == 1
    assert value(after, "bot_runs_total", status="done") == 1
    assert value(after, "bot_run_seconds_count", outcome="answered") == 1
    assert value(after, "bot_model_calls_total", provider="injected", outcome="ok") == 2
    assert value(after, "bot_messages_sent_total", channel="telegram") >= 2
    assert value(after, "bot_outbox_backlog") == 0
    assert value(after, "bot_queue_depth", partition="0") == 0

    # Bounded labels: no chat or user id anywhere in the exposition.
    _status, text = await scrape(gateway)
    values = {v for _name, labels in parse(text) for _key, v in labels}
    assert not [v for v in values if str(ALICE) in v], values
    assert "_created" not in text


async def test_metrics_token_and_readiness(env: Env) -> None:
    settings = env.configure(http=True)
    settings = settings.model_copy(update={"metrics": settings.metrics.model_copy(update={"token": "scrape-secret-1"})})
    gateway = await env.start(ScriptedModel([]))
    # The env's gateway was made from the first settings: start one with the token.
    await env.stop(gateway)
    gateway = Gateway(settings, model=ScriptedModel([]), tools=[])
    await gateway.start()
    env.running.append(gateway)
    assert (await scrape(gateway))[0] == 401
    assert (await scrape(gateway, "wrong"))[0] == 401
    status, text = await scrape(gateway, "scrape-secret-1")
    assert status == 200 and "bot_messages_received_total" in text
    assert gateway.http is not None
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{gateway.http.port}/readyz") as response:
            assert response.status == 200
            assert (await response.json()) == {"ready": True, "problems": []}
        gateway._started = False  # as while stopping
        async with session.get(f"http://127.0.0.1:{gateway.http.port}/readyz") as response:
            assert response.status == 503
        gateway._started = True


def test_label_values_are_bounded() -> None:
    from bot.ops.metrics import MAX_VALUES, Metrics

    metrics = Metrics()
    for i in range(MAX_VALUES + 50):
        metrics.observe("tool_call", "agent", {"tool": f"tool_{i}"})
    names = {
        s.labels["tool"]
        for f in text_string_to_metric_families(_text(metrics))
        for s in f.samples
        if "tool" in s.labels
    }
    assert len(names) == MAX_VALUES + 1 and "other" in names


def _text(metrics: Any) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


def test_loop_metrics_are_exposed_exactly_as_prometheus_clients_own() -> None:
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from bot.ops.loopmetrics import LoopCounter, LoopHistogram

    ours, theirs = CollectorRegistry(), CollectorRegistry()
    counters = (LoopCounter("c", "a counter", ("k",), ours), Counter("c", "a counter", ("k",), registry=theirs))
    buckets = (0.001, 0.25, 1.0, 2.5)
    histograms = (
        LoopHistogram("h", "a histogram", ("k", "o"), ours, buckets),
        Histogram("h", "a histogram", ("k", "o"), buckets=buckets, registry=theirs),
    )
    for counter in counters:
        counter.labels("a").inc()
        counter.labels("a").inc(2.5)
        counter.labels("b").inc()
    for histogram in histograms:
        for value in (0.0005, 0.25, 0.3, 1.0, 7.0):  # a value equal to a bound is in that bound's bucket
            histogram.labels("a", "ok").observe(value)
        histogram.labels("b", "error").observe(2.5)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()
    with pytest.raises(ValueError):
        counters[0].labels("a").inc(-1)
    with pytest.raises(ValueError):
        counters[0].labels("a", "extra")
