"""A job's notices (fires missed while the bot was down, a schedule that cannot be read any more) carry an
idempotency key of their fire, as its messages do: the notice the outbox sends again after a crash comes back from
Discord as the message it already has (real discord.py against the fake Discord, which answers a repeated nonce
sent with ``enforce_nonce`` with the message it has).  Before, they had no key and were posted twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.config.jobs import JobsSection
from bot.events import ChatKey, InboundMessage, OutboundMessage
from bot.jobs.service import JobService
from bot.jobs.triggers import Trigger
from bot.store.sql.repos.jobs import JobStore
from bot.store.sql.store import SqlStore
from channels.discord import DiscordChannel
from channels.discord.settings import DiscordSettings
from tests.fakes.discord_server import BOT_ID, CHANNEL_ID, FakeDiscord
from tests.helpers.jobs import BERLIN

CHAT = ChatKey(channel="discord", chat_id=CHANNEL_ID)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def committed_notices(tmp_path: Path, clock: FakeClock, *, unreadable: bool = False) -> list[str]:
    """Run the job service over three days down; the notices it committed to the outbox, as JSON (what the outbox
    sends again after a crash)."""
    committed: list[str] = []

    async def deliver(outbox_id: int, message: OutboundMessage) -> None:
        [(row,)] = await store.read("SELECT message FROM outbox WHERE id = ?", (outbox_id,))
        committed.append(row)

    async def publish(event: InboundMessage) -> None:
        raise AssertionError("no prompt jobs here")

    async def zone_of(chat: ChatKey) -> str:
        return "Europe/Berlin"

    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    service = JobService(
        JobsSection(), JobStore(store, Trigger), deliver=deliver, publish=publish, zone_of=zone_of, clock=clock
    )
    try:
        if unreadable:  # as an older version stored it (APScheduler's "last")
            trigger = Trigger.from_json({"kind": "cron", "spec": "0 8 last * *", "timezone": "Europe/Berlin"})
            await service.jobs.add(
                chat_key=str(CHAT), owner="discord:u1", name="old", trigger=trigger, action="message",
                text="stand-up", agent=None, first=clock.now(), max_per_chat=5, max_per_user=5,
            )  # fmt: skip
        else:
            await service.create(CHAT, "discord:u1", name="water", action="message", text="water", cron="0 8 * * *")
        await clock.advance(3 * 86_400 + 12 * 3600)  # the last fire 13 h ago: past the grace
        await service.tick()
    finally:
        await store.close()
    return committed


def posted(fake: FakeDiscord) -> list[str]:
    return [m["content"] for m in fake.messages.values() if m["author"]["id"] == BOT_ID]


async def sent_twice(fake: FakeDiscord, message_json: str) -> None:
    """As the outbox does when the process died before the mark: the same row sent by two adapters (two starts)."""
    message = OutboundMessage.model_validate_json(message_json)
    for _ in range(2):
        channel = DiscordChannel(DiscordSettings(enabled=True, token="test-token", api_base=fake.url, allow_from=["*"]))
        try:
            await channel.send(message)
        finally:
            await channel.stop()


async def test_a_missed_fire_notice_sent_again_is_posted_once(tmp_path: Path, fake: FakeDiscord) -> None:
    clock = FakeClock(datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))
    [notice] = await committed_notices(tmp_path, clock)
    assert "missed 3 fires while I was offline" in notice
    assert OutboundMessage.model_validate_json(notice).key is not None, "keyed by the fire"
    await sent_twice(fake, notice)
    assert len(posted(fake)) == 1 and fake.nonce_hits == 1


async def test_a_paused_job_notice_sent_again_is_posted_once(tmp_path: Path, fake: FakeDiscord) -> None:
    clock = FakeClock(datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN))
    [notice] = await committed_notices(tmp_path, clock, unreadable=True)
    assert "is paused: its schedule" in notice
    await sent_twice(fake, notice)
    assert len(posted(fake)) == 1 and fake.nonce_hits == 1
