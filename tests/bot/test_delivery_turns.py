"""Committed entries go out one at a time per channel, each marked sent before the next is handed over, so a
crash can leave at most one of a channel's replies sent and unmarked (sent again at the next start).

The real gateway (store, supervisor, runs, delivery) with a channel at the network seam whose sends take a
few turns of the event loop, as a round trip does; ``tests/channels/test_reply_crash.py`` shows the outcome
with SIGKILL and the real Telegram client.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.config.settings import Settings
from bot.delivery import InDoubt
from bot.events import ChatKey, InboundMessage, OutboundMessage, Sender
from bot.gateway.app import Gateway
from bot.inbox import Inbox
from bot.store.sql.sent_journal import SentJournal
from bot.store.sql.store import SqlStore
from tests.waiting import eventually

CHATS = 12


class Platform:
    """Records each committed entry's send: how many others were on their way meanwhile, and which entries it
    had already taken a start after a crash at that moment would send again."""

    name = "console"

    def __init__(self, *, dedupes_by_key: bool = False) -> None:
        self.dedupes_by_key = dedupes_by_key
        self.store: SqlStore | None = None
        self.journal: Path | None = None
        self.replies: list[OutboundMessage] = []
        self.beside: list[int] = []
        self.unmarked: list[set[str]] = []
        self._on_the_way = 0
        self._taken: set[str] = set()
        self._refs = itertools.count(1)
        self.second_started = asyncio.Event()

    async def start(self, inbox: Inbox) -> None:
        return None

    async def would_send_again(self) -> set[str]:
        """The keys of the entries a start after a crash now would send: in the outbox, not in the sent journal."""
        assert self.store is not None and self.journal is not None
        journal = SentJournal(self.journal)
        journal.open()
        listed = journal.listed()
        rows = await self.store.read("SELECT id, message FROM outbox")
        return {str(OutboundMessage.model_validate_json(m).key) for i, m in rows if i not in listed}

    async def stop(self) -> None:
        return None

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing" or message.key is None:
            return None
        self.unmarked.append(self._taken & await self.would_send_again())
        self.beside.append(self._on_the_way)
        self._on_the_way += 1
        if self._on_the_way >= 2:
            self.second_started.set()
        try:
            if self.dedupes_by_key and len(self.beside) == 1:
                await eventually(self.second_started.is_set, what="a second entry sent beside the first")
            for _ in range(3):  # a round trip: others may run meanwhile
                await asyncio.sleep(0)
        finally:
            self._on_the_way -= 1
        self._taken.add(message.key)
        self.replies.append(message)
        return f"m{next(self._refs)}"


async def burst(make_settings: Callable[..., Settings], scripted: Any, platform: Platform) -> Gateway:
    """One message in each of ``CHATS`` chats at once; returns once every chat is answered."""
    settings = make_settings(channels={"console": {"enabled": True, "allow_from": ["*"]}}, routing={"strategy": "rule"})
    gateway = Gateway(settings, model=scripted(*(f"answer {i}" for i in range(CHATS))), channels=[platform])
    platform.store = gateway.store
    platform.journal = Path(settings.store.data_dir) / "bot.db-sent"
    await gateway.start()
    for i in range(CHATS):
        chat = ChatKey(channel="console", chat_id=f"c{i}")
        await gateway.inbox.submit(
            InboundMessage(id=f"m{i}", chat=chat, sender=Sender(id=f"u{i}"), text="hello", is_direct=True)
        )
    await eventually(lambda: len(platform.replies) == CHATS, what="every chat answered")
    return gateway


async def test_a_channels_replies_go_one_at_a_time_each_marked_before_the_next(make_settings, scripted) -> None:
    platform = Platform()
    gateway = await burst(make_settings, scripted, platform)
    try:
        assert platform.beside == [0] * CHATS, "never two committed entries of one channel on their way"
        assert platform.unmarked == [set()] * CHATS, "each sent entry was marked before the next went"
        assert await platform.would_send_again() == set()
        await gateway.store.flush()  # the marks themselves follow in the group commit
        assert await gateway.store.read("SELECT count(*) FROM outbox") == [(0,)]
    finally:
        await gateway.stop(timeout=5)


async def test_a_platform_that_drops_resends_by_key_takes_replies_side_by_side(make_settings, scripted) -> None:
    platform = Platform(dedupes_by_key=True)
    gateway = await burst(make_settings, scripted, platform)
    try:
        assert max(platform.beside) >= 1, "a resend costs nothing there, so nothing waits for a mark"
        await gateway.store.flush()
        assert await gateway.store.read("SELECT count(*) FROM outbox") == [(0,)]
    finally:
        await gateway.stop(timeout=5)


async def test_a_send_stuck_past_stall_s_lets_the_channels_next_entry_go() -> None:
    doubt = InDoubt(stall_s=0.05)
    stuck, order = asyncio.Event(), []

    async def entry(name: str, channel: str = "telegram", *, hang: bool = False) -> None:
        async with doubt.turn(channel) as turn:
            order.append(name)
            if hang:
                await stuck.wait()  # waiting for flood control, say
            turn.sent()

    first = asyncio.create_task(entry("stuck", hang=True))
    await eventually(lambda: order == ["stuck"])
    other_channel = asyncio.create_task(entry("slack now", "slack"))
    await eventually(lambda: "slack now" in order, what="another channel never waits for this one")
    await asyncio.create_task(entry("telegram next"))
    assert order == ["stuck", "slack now", "telegram next"]
    stuck.set()
    await asyncio.gather(first, other_channel)
