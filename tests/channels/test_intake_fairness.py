"""Fairness through the real Telegram adapter (polling) against the fake Bot API, in process.

A flooding chat, huge messages and broken text must not hold up anyone else: the other chats keep
getting answers while the flooder's own work is stuck, polling keeps moving, and the sender of what cannot be
taken hears why (once, not once per message).  Nothing here races the clock: "not held up" is shown by the
other chat being answered while the flood (or the huge message) waits on a gate only the test opens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ToolDeclaration
from bot.config.settings import Settings
from bot.gateway.app import Gateway
from channels.telegram import TelegramChannel
from channels.telegram.delivery import Pacer
from tests.fakes.telegram_server import TOKEN, FakeTelegram, utf16_len
from tests.waiting import CEILING_S

FLOOD, OTHER = 1001, 1002
SLOW_DOWN = "Slow down"
NOT_TAKEN = "did not take your latest one"


class EchoModel(Model):
    """``echo: <the last user text>``; texts starting with ``held_prefix`` wait until :attr:`gate` opens."""

    name = "echo"

    def __init__(self, held_prefix: str = "\0") -> None:
        self.held_prefix = held_prefix
        self.gate = asyncio.Event()
        self.held = 0
        """Requests waiting at the gate now."""

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        text = next((m.text for m in reversed(messages) if m.role == "user" and m.text), "")
        if text.startswith(self.held_prefix) and not self.gate.is_set():
            self.held += 1
            try:
                await self.gate.wait()
            finally:
                self.held -= 1
        return ModelResponse(text="echo: " + text)


class Bot:
    """The fake Bot API and a started gateway with the real Telegram adapter (polling)."""

    def __init__(self, fake: FakeTelegram, gateway: Gateway) -> None:
        self.fake, self.gateway = fake, gateway

    @property
    def adapter(self) -> TelegramChannel:
        channel = self.gateway.channels[0]
        assert isinstance(channel, TelegramChannel)
        return channel

    def say(self, chat: int, text: str) -> int:
        """Queue a private message from ``chat``'s user; its update id."""
        update: dict[str, Any] = self.fake.push(self.fake.message(text, chat_id=chat, user_id=chat))
        return int(update["update_id"])

    def texts(self, chat: int) -> list[str]:
        return self.fake.sent_texts(chat)

    def confirmed(self) -> int:
        """The offset of the latest getUpdates: every update below it is confirmed."""
        return max((int(c.params.get("offset") or 0) for c in self.fake.of("getUpdates", ok=None)), default=0)

    async def answer(self, chat: int, text: str) -> float:
        """Wait for a message to ``chat`` that contains ``text``; when it was seen (``time.monotonic()``)."""
        await self.fake.wait_for(lambda: any(text in t for t in self.texts(chat)), CEILING_S)
        return time.monotonic()


@pytest.fixture
async def start_bot(make_settings: Callable[..., Settings]) -> AsyncIterator[Callable[..., Any]]:
    """``await start_bot(model, **limits)``: a :class:`Bot`; stopped (and the fake too) at the end."""
    fake = FakeTelegram()
    await fake.start()
    gateways: list[Gateway] = []

    async def start(model: Model, **limits: Any) -> Bot:
        telegram = {
            "enabled": True,
            "token": TOKEN,
            "api_base": fake.base_url,
            "allow_from": ["*"],
            "poll_timeout_s": 1,
            "commands_menu": False,
        }
        settings = make_settings(
            channels={"telegram": telegram, "console": {"enabled": False}},
            routing={"strategy": "rule"},
            limits=limits,
        )
        gateway = Gateway(settings, model=model, channels=[TelegramChannel(settings.channels.telegram)], tools=[])
        await gateway.start()
        gateways.append(gateway)
        return Bot(fake, gateway)

    try:
        yield start
    finally:
        for gateway in gateways:
            await gateway.stop(timeout=1)  # a flooded chat's queue is cut short (it stays in the inbox)
        await fake.stop()


async def test_a_flooding_chat_does_not_hold_up_another(start_bot: Callable[..., Any]) -> None:
    """3,000 messages from one chat whose answers are stuck (the model holds them until the test says so);
    another chat's message, sent while the flood is being taken, is answered all the same.  Default limits
    except ``sender_rate_per_min: 0``: with the default token bucket (30 a minute, burst 20) the flooder would be
    cut off by the rate limit before its chat's queue ever filled.

    Measured here (2 cores shared with other jobs): the other chat's message, queued behind about 2,900 flood
    updates, was taken 0.3-0.5 s after it was sent (0.7 s with two more busy processes) and answered 0.01-0.03 s
    later; about 100 flood messages were queued, about 2,900 refused.
    """
    model = EchoModel(held_prefix="flood")
    bot: Bot = await start_bot(model, sender_rate_per_min=0)
    flood = [bot.say(FLOOD, f"flood {n}") for n in range(3000)]
    await bot.fake.wait_for(lambda: bot.confirmed() > flood[0], CEILING_S)  # the first batch is taken
    sent = time.monotonic()
    other = bot.say(OTHER, "are you there?")
    assert bot.confirmed() <= flood[-1], "the flood is still being taken when the other chat writes"

    answered = await bot.answer(OTHER, "echo: are you there?") - sent
    assert bot.confirmed() > other, "polling moved past the flood"
    flood_echoes = [t for t in bot.texts(FLOOD) if t.startswith("echo: ")]
    assert model.held == 1 and flood_echoes == [], "answered while the flood's first message is still held"
    assert bot.texts(OTHER) == ["echo: are you there?"]
    model.gate.set()

    # Everything was taken (confirmed), most of the flood refused rather than queued.
    await bot.fake.wait_for(lambda: not bot.fake.pending, CEILING_S)
    stats = bot.gateway.inbox.stats
    assert stats.refused.get("chat_full", 0) > 2500, stats
    assert stats.accepted < 250, stats
    # One "slow down" notice, and a "not taken" one at most once per notice_interval_s (60 s by default).
    await bot.answer(FLOOD, NOT_TAKEN)
    await bot.answer(FLOOD, SLOW_DOWN)
    await bot.answer(FLOOD, "echo: flood 0")
    texts = bot.texts(FLOOD)
    assert sum(SLOW_DOWN in t for t in texts) == 1
    assert 1 <= sum(NOT_TAKEN in t for t in texts) <= 3
    # The flood is answered in order, as far as it got (pacing: about one message a second in a private chat).
    echoes = [t for t in texts if t.startswith("echo: ")]
    assert echoes and echoes == [f"echo: flood {n}" for n in range(len(echoes))]
    print(f"\nflood: other chat answered after {answered:.2f}s; inbox {stats}")


async def test_huge_messages_do_not_hold_up_another_chat(start_bot: Callable[..., Any]) -> None:
    """A 40 KB text and a 1 MB text (Telegram caps texts at 4,096 characters; the adapter must cope anyway)
    while a third chat talks: it is answered while the 40 KB one's answer is still held; the 40 KB one is then
    answered (default ``limits.max_text_chars``, 100,000) in 4,096-character messages; the 1 MB one gets a "too
    long" notice.

    Measured here: the third chat's answers took 0.01-0.14 s; the notice and the 40 KB answer (11 messages)
    were out within 0.15-0.32 s of the first update.
    """
    model = EchoModel(held_prefix="word0")
    bot: Bot = await start_bot(model)
    # Private chats are paced at one message a second after a burst of 5: the eleven-part answer would take
    # 6 s.  Pacing is not under test here (the fake enforces no flood limits).
    bot.adapter.api.pacer = Pacer(private=(50, 50.0))
    big, huge, talker = 2001, 2002, 2003
    words = "".join(f"word{n} " for n in range(10_000))
    big_text, huge_text = words[:40_960], (words * 20)[:1_000_000]
    expected = ("echo: " + big_text).split()

    def whole() -> list[str] | None:
        parts = bot.texts(big)
        return parts if " ".join(parts).split() == expected else None

    began = time.monotonic()
    bot.say(big, big_text)
    bot.say(huge, huge_text)
    latencies = []
    for n in range(5):
        sent = time.monotonic()
        bot.say(talker, f"still there? {n}")
        latencies.append(round(await bot.answer(talker, f"echo: still there? {n}") - sent, 3))
    assert model.held == 1, "answered while the 40 KB message's answer is held"
    model.gate.set()

    notice = await bot.fake.wait_for(lambda: [t for t in bot.texts(huge) if "too long" in t], CEILING_S)
    told = time.monotonic() - began
    assert notice == [
        "⚠️ Your message is too long (1,000,000 characters; I take at most 100,000). Please send a shorter one."
    ]
    parts = await bot.fake.wait_for(whole, CEILING_S)
    answered = time.monotonic() - began
    assert all(utf16_len(p) <= 4096 for p in parts)
    assert len(parts) in (11, 12), len(parts)  # 40,966 characters: 11 messages, one more for word boundaries
    assert bot.gateway.inbox.stats.refused == {"too_long": 1}
    print(
        f"\nhuge messages: the third chat's latencies {latencies}; the 1 MB one told after {told:.2f}s, "
        f"the 40 KB one answered (in {len(parts)} messages) after {answered:.2f}s"
    )


async def test_a_lone_surrogate_is_answered(start_bot: Callable[..., Any]) -> None:
    """``"\\ud800"`` in the update JSON (valid JSON, not valid Unicode) arrives as U+FFFD and is answered."""
    bot: Bot = await start_bot(EchoModel())
    bot.say(OTHER, "broken \ud800 text")
    await bot.answer(OTHER, "echo: broken")
    assert bot.texts(OTHER) == ["echo: broken \ufffd text"]
