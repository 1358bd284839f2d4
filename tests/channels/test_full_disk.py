"""A full disk while Telegram messages arrive: nothing acknowledged is lost, nothing is answered twice.

The real gateway with the real Telegram adapter (aiogram, polling or webhook) against the fake Bot API, on a
real SQLite database whose disk is made full at the SQLite seam (``tests.store.full_disk.FullDisk``): every
write that takes a message fails with "database or disk is full" until the disk is cleared.  Twelve people
write five messages each.  Their first messages are stored (acknowledged) before the disk fills and reach the
supervisor while it is full (the model routing them waits until the disk is full: the LLM routing strategy
runs before the write that marks a message handled); the other 48 arrive while it is full and are redelivered
by the platform again and again.  After the "30 s" (the fake clock's; the redeliveries come as fast as the
platform makes them) the disk clears and, without a restart:

- every message is answered exactly once, with its own echo, in the order each person wrote;
- nobody is told they send too fast (a redelivery of a message the database would not take costs the sender
  no token, and is never refused as "too fast"), and nothing the platform was told "received" is lost;
- each person hears once that the answer is delayed (the supervisor tries the refused write again with backoff
  on the fake clock) and is never asked to resend.

When every redelivery took a token (the defaults: 30 a minute, a burst of 20) and nothing was given back, the
buckets ran dry within 5-6 polling rounds or about 19 webhook attempts, and the updates refused as "too fast"
were acknowledged (the offset moved past them; the webhook answered 200): lost.  Measured here (2 shared cores,
other jobs running): from the disk clearing to the last of the 60 answers 0.2-0.6 s by webhook and 1.1-1.5 s by
polling (the adapter pauses a second after a batch it could not store), besides the supervisor's backoff (at
most ``RETRY_CAP_S`` = 5 s; the fake clock steps over it).  The polling test takes about 10 s (8 rounds a
second apart), the webhook one about 5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agents.messages import Message, ToolCall
from agents.models.base import Model, ModelResponse, ToolDeclaration
from bot.clock import FakeClock
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from bot.gateway.supervisor import DELAYED, RETRY_CAP_S
from channels.telegram import TelegramChannel
from tests.channels._intake_gateway import unpaced
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.store.full_disk import FullDisk
from tests.waiting import CEILING_S, eventually, progressing

pytestmark = pytest.mark.xdist_group("crash")

CHATS = 12
PER_CHAT = 5
"""60 messages, ``c{chat}-m{n}``, one sender per chat (private chats)."""
POLLING_ROUNDS = 8
"""getUpdates rounds that hand out the same unstored batch (about a second apart: the adapter's pause)."""
WEBHOOK_ROUNDS = 30
"""Attempts at each chat's next update while the disk is full."""
OUTAGE_S = 30.0
WEBHOOK_SECRET = "full-disk-secret"
TOO_FAST = "faster than I can take them"


class RoutingGate(Model):
    """Routes every message to the chat agent (a ``transfer_to_chat`` call: the LLM strategy) and answers
    ``echo: <text>``.  Routing waits while :attr:`gate` is closed; :attr:`held` counts who waits."""

    name = "routing-gate"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.held = 0

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        transfers = [t.name for t in tools if t.name.startswith("transfer_to_")]
        if transfers:
            self.held += 1
            try:
                await self.gate.wait()
            finally:
                self.held -= 1
            target = "transfer_to_chat" if "transfer_to_chat" in transfers else transfers[0]
            return ModelResponse(tool_calls=(ToolCall(id="route-1", name=target, args={}),))
        text = next((m.text for m in reversed(messages) if m.role == "user" and m.text), "")
        return ModelResponse(text="echo: " + text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Bot:
    """The fake Bot API, and a gateway on a fake clock with the real Telegram adapter."""

    def __init__(self, fake: FakeTelegram, gateway: Gateway, clock: FakeClock, model: RoutingGate) -> None:
        self.fake, self.gateway, self.clock, self.model = fake, gateway, clock, model
        self.disk = FullDisk(gateway.store, Path(gateway.settings.store.data_dir) / "bot.db")

    def texts(self, chat: int) -> list[str]:
        return self.fake.sent_texts(chat)

    def echoes(self) -> int:
        return sum(t.startswith("echo: ") for t in self.fake.sent_texts())

    def inbox(self) -> dict[str, str]:
        with contextlib.closing(sqlite3.connect(self.disk.path)) as db:
            rows = db.execute("SELECT event_key, status FROM inbox WHERE event_key LIKE 'telegram:%'")
            return {key: status for key, status in rows}


@pytest.fixture
async def start_bot(make_settings: Callable[..., Settings]) -> AsyncIterator[Callable[..., Any]]:
    fake = FakeTelegram()
    await fake.start()
    gateways: list[Gateway] = []

    async def start(mode: str, port: int) -> Bot:
        telegram = {
            "enabled": True,
            "token": TOKEN,
            "api_base": fake.base_url,
            "allow_from": ["*"],
            "mode": mode,
            "webhook": {"secret_token": WEBHOOK_SECRET},
            "poll_timeout_s": 1,
            "commands_menu": False,
        }
        settings = make_settings(
            channels={"telegram": telegram, "console": {"enabled": False}},
            routing={"strategy": "llm"},
            http={"enabled": False, "host": "127.0.0.1", "port": port},
        )
        clock, model = FakeClock(), RoutingGate()
        channel = TelegramChannel(settings.channels.telegram)
        gateway = Gateway(settings, model=model, channels=[channel], tools=[], clock=clock)
        unpaced(gateway)
        await gateway.start()
        gateways.append(gateway)
        return Bot(fake, gateway, clock, model)

    try:
        yield start
    finally:
        for gateway in gateways:
            await gateway.stop(timeout=2)
        await fake.stop()


_UPDATES: dict[tuple[int, int, int], dict[str, Any]] = {}


def update(fake: FakeTelegram, chat: int, n: int) -> dict[str, Any]:
    """The update of message ``n`` of ``chat`` (the same each time it is delivered)."""
    key = (id(fake), chat, n)
    if key not in _UPDATES:
        message = fake.message(f"c{chat}-m{n}", chat_id=1000 + chat, user_id=1000 + chat)
        _UPDATES[key] = {"update_id": 10_000 + n * CHATS + chat, **message}
    return _UPDATES[key]


async def full_disk_while_messages_arrive(bot: Bot, deliver: Any) -> dict[str, float]:
    """The scenario (see the module docstring) with ``deliver`` as the platform; the figures measured."""
    await deliver.first()  # each chat's m0: stored and acknowledged, its routing waits at the gate
    await eventually(lambda: bot.model.held == CHATS, what="every first message routing")
    await bot.disk.fill()
    bot.model.gate.set()  # ...and now it is taken while the disk is full
    await eventually(
        lambda: all(bot.texts(1000 + c) == [DELAYED] for c in range(CHATS)), what="one delayed notice per chat"
    )
    await deliver.rest()  # m1..m4 while the disk is full: redelivered again and again
    await bot.clock.advance(OUTAGE_S)  # the supervisor's attempts at the m0s go on failing meanwhile
    assert bot.echoes() == 0 and not any(TOO_FAST in t for t in bot.fake.sent_texts())
    assert all(bot.texts(1000 + c) == [DELAYED] for c in range(CHATS))

    cleared = time.monotonic()
    await bot.disk.clear()
    await bot.clock.advance(RETRY_CAP_S)  # the longest backoff: the m0s are tried again
    await progressing(bot.echoes, CHATS * PER_CHAT, what="answers")
    last = time.monotonic() - cleared
    await deliver.done()
    await bot.gateway.settled()

    for c in range(CHATS):
        expected = [DELAYED] + [f"echo: c{c}-m{n}" for n in range(PER_CHAT)]
        assert bot.texts(1000 + c) == expected, f"chat {c}"
    inbox = bot.inbox()
    assert len(inbox) == CHATS * PER_CHAT and set(inbox.values()) == {"done"}
    assert bot.gateway.inbox.stats.refused == {}
    return {"cleared_to_last_answer_s": round(last, 2)}


class Polling:
    """Telegram holding updates for getUpdates: what is not confirmed by the offset is handed out again."""

    def __init__(self, bot: Bot) -> None:
        self.bot, self.fake = bot, bot.fake

    def offset(self) -> int:
        return max((int(c.params.get("offset") or 0) for c in self.fake.of("getUpdates", ok=None)), default=0)

    async def first(self) -> None:
        for c in range(CHATS):
            self.fake.push(update(self.fake, c, 0))
        await self.fake.wait_for(lambda: self.offset() > 10_000 + CHATS - 1, CEILING_S)

    async def rest(self) -> None:
        offset = self.offset()
        for n in range(1, PER_CHAT):
            for c in range(CHATS):
                self.fake.push(update(self.fake, c, n))
        rounds = len(self.fake.of("getUpdates", ok=None))

        def handed_out_again() -> bool:
            calls = self.fake.of("getUpdates", ok=None)[rounds:]
            again = [c for c in calls if int(c.params.get("offset") or 0) == offset]
            return len(again) > POLLING_ROUNDS or self.offset() != offset

        await self.fake.wait_for(handed_out_again, CEILING_S)
        assert self.offset() == offset, "updates confirmed (acknowledged) while the disk is full"
        assert len(self.fake.pending) == CHATS * (PER_CHAT - 1)

    async def done(self) -> None:
        await self.fake.wait_for(lambda: not self.fake.pending, CEILING_S)


class Webhook:
    """Telegram posting updates: each chat's next one once the previous got a 200, a failed one again."""

    def __init__(self, bot: Bot, port: int) -> None:
        self.bot, self.url = bot, f"http://127.0.0.1:{port}/telegram/webhook"
        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CEILING_S))
        self.attempts: dict[tuple[int, int], list[int]] = {}
        self.lanes: list[asyncio.Task[None]] = []

    async def post(self, chat: int, n: int) -> int:
        headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        async with self.http.post(self.url, json=update(self.bot.fake, chat, n), headers=headers) as response:
            self.attempts.setdefault((chat, n), []).append(response.status)
            return response.status

    async def first(self) -> None:
        statuses = await asyncio.gather(*(self.post(c, 0) for c in range(CHATS)))
        assert statuses == [200] * CHATS

    async def rest(self) -> None:
        async def lane(chat: int) -> None:
            for n in range(1, PER_CHAT):
                while await self.post(chat, n) != 200:  # noqa: ASYNC110 - the platform's retry, not a wait
                    await asyncio.sleep(0.01)  # fake platform: Telegram retries an update that got no 200

        def redelivered() -> bool:
            acked = any(200 in self.attempts.get((c, 1), []) for c in range(CHATS))
            return acked or all(len(self.attempts.get((c, 1), [])) >= WEBHOOK_ROUNDS for c in range(CHATS))

        self.lanes = [asyncio.create_task(lane(c)) for c in range(CHATS)]
        await eventually(redelivered, what="redeliveries while the disk is full")
        statuses = {s for c in range(CHATS) for s in self.attempts[(c, 1)]}
        assert statuses == {503}, f"updates answered {statuses} (200: acknowledged) while the disk is full"

    async def done(self) -> None:
        await asyncio.wait_for(asyncio.gather(*self.lanes), CEILING_S)
        assert all(statuses[-1] == 200 for statuses in self.attempts.values())

    async def close(self) -> None:
        for task in self.lanes:
            task.cancel()
        await asyncio.gather(*self.lanes, return_exceptions=True)
        await self.http.close()


async def test_full_disk_polling_loses_nothing_and_answers_once(start_bot: Callable[..., Any]) -> None:
    bot: Bot = await start_bot("polling", 0)
    figures = await full_disk_while_messages_arrive(bot, Polling(bot))
    print(f"\npolling, full disk: {figures}; rows that filled the room left {bot.disk.filled}")


async def test_full_disk_webhook_loses_nothing_and_answers_once(start_bot: Callable[..., Any]) -> None:
    port = free_port()
    bot: Bot = await start_bot("webhook", port)
    platform = Webhook(bot, port)
    try:
        figures = await full_disk_while_messages_arrive(bot, platform)
    finally:
        await platform.close()
    retried = sum(len(v) - 1 for v in platform.attempts.values())
    print(f"\nwebhook, full disk: {figures}; redeliveries {retried}; rows that filled the room left {bot.disk.filled}")
