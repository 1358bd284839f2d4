"""SIGKILL a real gateway while it sends a burst of final replies: each reply reaches Telegram once, but for
at most one whose outcome the crash left unknown.

A gateway subprocess (``_reply_gateway.py``: the real ``Gateway``, the real aiogram adapter polling a fake Bot
API in this process, SQLite) raises a tool confirmation in each of 20 chats; all 20 are approved at once, and
the gateway is SIGKILLed by the fake Bot API itself the moment it receives the 10th final reply (before it
answers it: that reply is out, and the gateway cannot know).  The restarted gateway sends what was committed
and not marked sent.  Telegram has no idempotency key, so a reply sent and not yet marked is sent again; the
gateway keeps that to one reply at a time per channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from asyncio.subprocess import PIPE
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bot.store.sql.sent_journal import SentJournal
from tests.fakes.telegram_server import FakeTelegram
from tests.waiting import CEILING_S

pytestmark = pytest.mark.xdist_group("crash")

SCRIPT = Path(__file__).with_name("_reply_gateway.py")
ROOT = Path(__file__).resolve().parents[2]
CHATS = 20
KILL_AT = 10
"""The final reply whose arrival at the fake Bot API kills the gateway."""
START_TIMEOUT_S = CEILING_S * 2
FIRST_CHAT = 3000


class KillingTelegram(FakeTelegram):
    """The fake Bot API; it SIGKILLs ``victim`` on receiving the ``kill_at``-th final reply (it is delivered:
    stored as sent, and the gateway never hears so)."""

    victim: int | None = None
    kill_at = 0

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        message = await super()._api_sendMessage(params)
        if self.victim is not None and len(finals(self)) == self.kill_at:
            os.kill(self.victim, signal.SIGKILL)
            self.victim = None
        return message


def finals(fake: FakeTelegram) -> list[str]:
    """The chat of every final reply Telegram took, in order."""
    return [str(c.params["chat_id"]) for c in fake.of("sendMessage") if c.params["text"].startswith("done:")]


def journal_saved(tmp: Path) -> int:
    """Entries still in the outbox after the kill that the sent journal lists (sent: not to be sent again)."""
    journal = SentJournal(tmp / "data" / "bot.db-sent")
    journal.open()
    with contextlib.closing(sqlite3.connect(tmp / "data" / "bot.db")) as db:
        return sum(1 for (i,) in db.execute("SELECT id FROM outbox") if i in journal.listed())


class Gateways:
    """The gateway subprocess (SIGKILLed) and its forked standby (the restart, imports already paid)."""

    def __init__(self, tmp: Path, fake_url: str) -> None:
        self.tmp, self.fake_url = tmp, fake_url
        self.log = tmp / "gateway.log"
        self.proc: asyncio.subprocess.Process | None = None
        self.standby: int | None = None

    async def start(self) -> dict[str, Any]:
        env = {
            **os.environ,
            "FAKE_URL": self.fake_url,
            "DATA_DIR": str(self.tmp / "data"),
            "COUNT_FILE": str(self.tmp / "count.txt"),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        with self.log.open("a") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, str(SCRIPT), stdin=PIPE, stdout=PIPE, stderr=log, cwd=self.tmp, env=env
            )
        self.standby = (await self._line())["standby"]
        return await self._line()

    async def killed(self) -> int | None:
        """Wait until the SIGKILLed gateway is gone; its return code."""
        assert self.proc is not None
        async with asyncio.timeout(CEILING_S):
            while self.proc.returncode is None:  # noqa: ASYNC110 - set by asyncio's child watcher
                await asyncio.sleep(0.01)
        return self.proc.returncode

    async def restart(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"start\n")
        await self.proc.stdin.drain()
        return await self._line()

    async def stop(self) -> None:
        """SIGTERM the restarted gateway; it is gone when its stdout closes."""
        assert self.standby is not None
        os.kill(self.standby, signal.SIGTERM)
        assert await self._line(eof=True) is None
        self.standby = None

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
        if self.standby is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.standby, signal.SIGKILL)
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), CEILING_S)

    async def _line(self, *, eof: bool = False) -> Any:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), START_TIMEOUT_S)
        if not line and not eof:
            raise AssertionError(f"the gateway exited: {self.log.read_text()[-3000:]}")
        return json.loads(line) if line else None


async def test_a_burst_of_final_replies_cut_by_sigkill_doubles_at_most_one(tmp_path: Path) -> None:
    fake = KillingTelegram()
    await fake.start()
    gateways = Gateways(tmp_path, fake.base_url)
    chats = [FIRST_CHAT + i for i in range(CHATS)]
    try:
        ready = await gateways.start()
        for chat in chats:
            fake.push(fake.message(f"@react delete cache c{chat}", chat_id=chat, user_id=chat))

        def prompts() -> dict[int, tuple[str, str]] | None:
            found = {}
            for (chat, message_id), message in fake.messages.items():
                rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
                approve = [b["callback_data"] for row in rows for b in row if "Approve" in b["text"]]
                if chat in chats and approve:
                    found[chat] = (f"{chat}:{message_id}", approve[0])
            return found if len(found) == CHATS else None

        asked = await fake.wait_for(prompts, CEILING_S)
        fake.victim, fake.kill_at = ready["pid"], KILL_AT
        for chat, (ref, payload) in asked.items():  # all approved at once: one getUpdates hands them out
            fake.push(fake.press(ref, payload, user_id=chat))
        assert await gateways.killed() == -signal.SIGKILL
        at_kill = len(finals(fake))
        saved = journal_saved(tmp_path)

        recovered = await gateways.restart()
        await fake.wait_for(lambda: set(finals(fake)) == {str(c) for c in chats}, CEILING_S)
        await gateways.stop()  # anything still to be sent is sent before this returns
    finally:
        await gateways.close()
        await fake.stop()

    per_chat = Counter(finals(fake))
    doubled = sorted(chat for chat, n in per_chat.items() if n > 1)
    runs = (tmp_path / "count.txt").read_text().splitlines()
    recovery = {k: len(v) if isinstance(v, list) else v for k, v in recovered["recovery"].items() if v}
    print(
        f"\nreplies at the kill {at_kill}/{CHATS}; sent with their marks not committed yet, listed in the journal "
        f"{saved}; doubled {len(doubled)} {doubled}; recovery {recovery}"
    )
    assert KILL_AT <= at_kill < CHATS, "the kill came halfway through the final replies"
    assert set(per_chat) == {str(c) for c in chats}, "every chat got its final reply"
    assert len(doubled) <= 1, f"final replies sent twice: {doubled}"
    assert max(per_chat.values()) <= 2
    assert len(runs) == len(set(runs)) <= CHATS, "no tool ran twice"
