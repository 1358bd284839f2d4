"""A message committed to the outbox reaches Discord once, even when it is sent again: real discord.py against the
fake Discord (which, like Discord, answers a repeated nonce sent with ``enforce_nonce`` with the message it already
has), and a real gateway SIGKILLed between Discord creating a reply and the gateway hearing of it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.events import ChatKey, OutboundMessage
from channels.discord import DiscordChannel
from channels.discord.settings import DiscordSettings
from tests.channels._discord_gateway import LONG, PARTS
from tests.fakes.discord_server import BOT_ID, CHANNEL_ID, OTHER_CHANNEL_ID, FakeDiscord
from tests.waiting import CEILING_S

SCRIPT = Path(__file__).with_name("_discord_gateway.py")
ROOT = Path(__file__).resolve().parents[2]
CHAT = ChatKey(channel="discord", chat_id=CHANNEL_ID)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
    assert server.unexpected == [], f"calls the fake does not know: {server.unexpected}"


def adapter(fake: FakeDiscord) -> DiscordChannel:
    """A Discord adapter as a freshly started process has it (its own discord.py client)."""
    return DiscordChannel(DiscordSettings(enabled=True, token="test-token", api_base=fake.url, allow_from=["*"]))


async def send(fake: FakeDiscord, message: OutboundMessage) -> str | None:
    channel = adapter(fake)
    try:
        return await channel.send(message)
    finally:
        await channel.stop()


def posted(fake: FakeDiscord) -> list[str]:
    """The bot's messages that exist on the fake Discord, in the order they were made."""
    return [m["content"] for m in fake.messages.values() if m["author"]["id"] == BOT_ID]


async def test_a_message_sent_again_comes_back_as_the_one_discord_has(fake: FakeDiscord) -> None:
    """The outbox sends a committed message again when it cannot know it went out (the next start, another
    process): each of its parts carries the same nonce as the first time, and Discord makes nothing new."""
    reply = OutboundMessage(chat=CHAT, text=LONG, key="reply:0193b3a2c4d5e6f7")
    first = await send(fake, reply)
    assert posted(fake) == list(PARTS)
    again = await send(fake, reply)  # another client, as after a restart
    assert again == first and posted(fake) == list(PARTS) and fake.nonce_hits == 3
    requests = [c.body for c in fake.posts(CHANNEL_ID)]
    assert len(requests) == 6
    nonces = [body["nonce"] for body in requests]
    assert all(body["enforce_nonce"] is True for body in requests), "discord.py asks Discord to enforce the nonce"
    assert all(len(nonce) <= 25 for nonce in nonces), "Discord refuses longer nonces"
    assert len(set(nonces[:3])) == 3 and nonces[3:] == nonces[:3], "one nonce per part, the same on the resend"

    # Another reply with the same text (another run: another key) is a message of its own, here and elsewhere.
    await send(fake, reply.model_copy(update={"key": "reply:0193b3a2c4d5e6f8"}))
    elsewhere = reply.model_copy(update={"chat": ChatKey(channel="discord", chat_id=OTHER_CHANNEL_ID)})
    await send(fake, elsewhere.model_copy(update={"key": "reply:0193b3a2c4d5e6f9"}))
    assert posted(fake) == list(PARTS) * 3

    # What is left: Discord forgets nonces after a few minutes, and a resend after that is posted again.
    fake.forget_nonces()
    await send(fake, reply)
    assert posted(fake) == list(PARTS) * 4


async def test_a_message_without_a_key_is_still_never_doubled_by_a_retry(fake: FakeDiscord) -> None:
    """Unkeyed (a notice): random nonces, one per part; the adapter's own retry after a lost answer reuses them."""
    fake.rate_limit(r"^POST /channels/\d+/messages$", via=False)  # a proxy's 429: the adapter retries by itself
    notice = OutboundMessage(chat=CHAT, text="⚠️ a notice", kind="notice")
    await send(fake, notice)
    await send(fake, notice)
    assert posted(fake) == ["⚠️ a notice"] * 2
    tries = [c.body["nonce"] for c in fake.calls if c.method == "POST" and c.path.endswith("/messages")]
    assert len(tries) == 3 and tries[0] == tries[1] != tries[2]


# -- a real gateway, killed mid-send -------------------------------------------------------------------------------


class Process:
    """``bot``'s gateway with the Discord adapter (tests/channels/_discord_gateway.py), on the same data folder
    each time it is started."""

    def __init__(self, tmp: Path, fake: FakeDiscord) -> None:
        self.tmp, self.fake = tmp, fake
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {
            **os.environ,
            "FAKE_URL": self.fake.url,
            "DATA_DIR": str(self.tmp / "data"),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        with (self.tmp / "gateway.log").open("a") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, str(SCRIPT), stdout=asyncio.subprocess.PIPE, stderr=log, cwd=self.tmp, env=env
            )
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), CEILING_S * 2)
        assert line, f"the gateway exited: {(self.tmp / 'gateway.log').read_text()[-3000:]}"
        assert json.loads(line)["ready"]

    async def end(self, sig: signal.Signals) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return await asyncio.wait_for(self.proc.wait(), CEILING_S)

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    def unsent(self) -> list[Any]:
        with sqlite3.connect(self.tmp / "data" / "bot.db") as db:
            return db.execute("SELECT id, status FROM outbox").fetchall()


@pytest.mark.xdist_group("crash")
async def test_a_reply_cut_off_by_a_kill_is_posted_once_after_the_restart(tmp_path: Path, fake: FakeDiscord) -> None:
    """SIGKILL after Discord made the second of a reply's three parts and before the gateway heard of it: the
    reply is committed and not marked sent, so the next start sends it again; Discord answers the first two parts
    with the messages it has, and only the third is new."""
    gateway = Process(tmp_path, fake)
    try:
        await gateway.start()
        await fake.wait_identified(1)
        fake.hold_creates(lambda body: str(body.get("content") or "") == PARTS[1])
        await fake.message("long")
        await asyncio.wait_for(fake.held.wait(), CEILING_S)
        assert posted(fake) == list(PARTS[:2])
        assert await gateway.end(signal.SIGKILL) == -signal.SIGKILL
        fake.release()

        await gateway.start()  # recovery sends what is committed and not marked sent
        await fake.wait_for(lambda: PARTS[2] in posted(fake))
        assert posted(fake) == list(PARTS) and fake.nonce_hits == 2
        assert [c.body["content"] for c in fake.posts(CHANNEL_ID)] == [*PARTS[:2], *PARTS]

        # The same answer to a new message is a new reply (the outbox row may even have the same id: SQLite
        # reuses the id of a sent, deleted row), so it is posted.
        await fake.wait_identified(2)
        await fake.message("long")
        await fake.wait_for(lambda: len(fake.posts(CHANNEL_ID)) >= 8)  # its three parts were sent
        assert await gateway.end(signal.SIGTERM) == 0
        assert posted(fake) == list(PARTS) * 2 and gateway.unsent() == []
    finally:
        await gateway.close()
