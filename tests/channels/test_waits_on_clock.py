"""The channels wait on the clock they are given (issue 64 point 4): Telegram's polling back-off and flood waits,
Slack's pace and ``Retry-After``, Discord's retries and typing refresh all sleep on a test's ``FakeClock``, so a
test moves them past a minute of back-off with no real waiting (the platforms are the fake servers, over HTTP)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.clock import FakeClock
from bot.config.settings import Settings
from bot.events import ChatKey, OutboundMessage
from channels.discord.calls import Retrying
from channels.slack.delivery import WebApi, api_url
from channels.telegram import TelegramChannel
from channels.telegram.delivery import POLL_NETWORK_BACKOFF, POLL_REFUSED_BACKOFF, poll_delays
from tests.conftest import RecordingInbox
from tests.fakes.slack_server import FakeSlack
from tests.helpers.telegram import ALICE, Env, started
from tests.waiting import eventually


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[Env]:
    async with started(Env(make_settings)) as running:
        yield running


async def test_telegram_polling_backs_off_on_the_fake_clock(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "channels.telegram.adapter")
    clock = FakeClock()
    for _ in range(3):
        env.fake.fail("getUpdates", status=502)
    channel = TelegramChannel(env.configure().channels.telegram, clock=clock)
    inbox = RecordingInbox()
    await channel.start(inbox)
    try:
        polls = lambda: len(env.fake.of("getUpdates", ok=None))  # noqa: E731
        began = clock.monotonic()
        for tries, wait in ((1, 1.0), (2, 2.0), (3, 4.0)):  # failures on the way: 1, 2, 4 … 30 s
            await eventually(lambda tries=tries: polls() == tries and clock.pending == 1, what=f"try {tries} asleep")
            await clock.advance(wait - 0.01)
            assert polls() == tries and clock.pending == 1, "not before the back-off is over"
            await clock.advance(0.01)
        env.fake.push(env.fake.message("after the outage"))
        await inbox.wait_for(1)
        assert clock.monotonic() - began == pytest.approx(7.0), "1 + 2 + 4 s, on the fake clock"
        told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(told) == 2 and "retrying every" in told[0] and "reachable again after 3 failed tries" in told[1]
    finally:
        await channel.stop()


def test_telegram_polling_delays_keep_their_rules() -> None:
    from aiogram.exceptions import TelegramConflictError, TelegramNetworkError, TelegramRetryAfter
    from aiogram.methods import GetUpdates

    method = GetUpdates()
    delays = poll_delays()
    conflict = TelegramConflictError(method, "Conflict")
    network = TelegramNetworkError(method, "down")
    flood = TelegramRetryAfter(method, "Too Many Requests", 17)
    assert (
        [delays(e, n) for n, e in enumerate((network, conflict, flood, conflict, network), 1)]
        == [
            POLL_NETWORK_BACKOFF.delay(1),
            POLL_REFUSED_BACKOFF.delay(2),
            17.0,  # as Telegram says, and not a failed try: the back-off does not grow
            POLL_REFUSED_BACKOFF.delay(3),
            POLL_NETWORK_BACKOFF.delay(4),
        ]
        == [1.0, 4.0, 17.0, 8.0, 8.0]
    )
    assert delays(ValueError("a bug"), 6) is None, "what is not the platform's is not retried"
    assert [POLL_REFUSED_BACKOFF.delay(n) for n in (5, 6, 9)] == [32.0, 60.0, 60.0]
    assert [POLL_NETWORK_BACKOFF.delay(n) for n in (5, 6, 9)] == [16.0, 30.0, 30.0]


async def test_telegram_flood_wait_and_pace_are_on_the_fake_clock(env: Env) -> None:
    clock = FakeClock()
    channel = TelegramChannel(env.configure().channels.telegram, clock=clock)
    chat = ChatKey(channel="telegram", chat_id=str(ALICE))
    try:
        env.fake.fail("sendMessage", status=429, retry_after=30)
        sending = asyncio.create_task(channel.send(OutboundMessage(chat=chat, text="after the flood")))
        await eventually(lambda: env.fake.of("sendMessage", ok=False) and clock.pending == 1, what="flood wait")
        await clock.advance(29.9)
        assert not sending.done() and not env.fake.of("sendMessage")
        await clock.advance(0.1)
        assert await sending is not None and env.fake.sent_texts(ALICE) == ["after the flood"]
        # Then paced: a private chat's burst of 5 (refilled during the wait; the retry took one), then one a second.
        for n in range(4):
            await channel.send(OutboundMessage(chat=chat, text=f"burst {n}"))
        sixth = asyncio.create_task(channel.send(OutboundMessage(chat=chat, text="paced")))
        await eventually(lambda: clock.pending == 1, what="the pacer asleep")
        assert not sixth.done()
        await clock.advance(1.0)
        assert await sixth is not None and env.fake.sent_texts(ALICE)[-1] == "paced"
    finally:
        await channel.stop()


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    yield server
    await server.stop()


async def test_slack_pace_and_retry_after_are_on_the_fake_clock(slack: FakeSlack) -> None:
    clock = FakeClock()
    api = WebApi(AsyncWebClient(token="xoxb-t", base_url=api_url(slack.base_url), retry_handlers=[]), clock=clock)
    posted = lambda: [c for c in slack.calls if c.method == "chat.postMessage"]  # noqa: E731
    for n in range(3):  # a burst of 3, then one a second
        first = await api.post(channel="C1", text=f"burst {n}")
    fourth = asyncio.create_task(api.post(channel="C1", text="paced"))
    await eventually(lambda: clock.pending == 1, what="the pacer asleep")
    await clock.advance(0.99)
    assert not fourth.done() and len(posted()) == 3
    await clock.advance(0.01)
    await fourth
    assert len(posted()) == 4
    slack.fail("chat.update", retry_after=20)
    updating = asyncio.create_task(api.call("chat.update", channel="C1", ts=first["ts"], text="edited"))
    await eventually(lambda: clock.pending == 1, what="the Retry-After wait")
    await clock.advance(19.9)
    assert not updating.done()
    await clock.advance(0.1)
    await updating
    assert [c.method for c in slack.calls][-2:] == ["chat.update!429", "chat.update"]


async def test_discord_retries_are_on_the_fake_clock() -> None:
    clock = FakeClock()
    retrying = Retrying(attempts=8, budget_s=300.0, clock=clock)
    tries: list[float] = []

    async def flaky() -> str:
        tries.append(clock.monotonic())
        if len(tries) < 3:
            raise aiohttp.ClientConnectionError("reset")
        return "sent"

    call = asyncio.create_task(retrying("send a message", flaky))
    for wait in (2.0, 4.0):  # 2 ** attempt, up to 30 s
        await eventually(lambda: clock.pending == 1, what="the back-off")
        await clock.advance(wait)
    assert await call == "sent"
    assert [t - tries[0] for t in tries] == [0.0, 2.0, 6.0]
