"""SIGKILL a real gateway in the middle of a burst: nothing the platform was told "received" is lost.

A gateway subprocess (``_intake_gateway.py``: the real ``Gateway`` with the real Telegram or Slack
adapter, SQLite inbox, an echo model) takes a burst of messages over many chats from a fake platform
in this process; it is SIGKILLed while messages are still coming in, after some were answered, and
restarted on the same database.  The fake platform behaves as the real one does after a crash:

- Telegram polling: everything below the offset of the bot's latest getUpdates is confirmed; the rest
  stays queued and is handed out again on the next getUpdates;
- Telegram webhook and Slack HTTP: a request answered 200 is delivered; any other outcome (an error, a
  reset connection, 503) is retried with the same update / event id;
- Slack Socket Mode: an acknowledged envelope is delivered; an unacknowledged one is pushed again with the
  same envelope and event ids (``retry_attempt`` counting up) once the app is connected again.

Then: every acknowledged message is in the ``inbox`` table exactly once (and handled), is answered with
exactly ``echo: <its text>``, nothing else is answered, and per chat the first answers keep the send order.

Each test prints what was in flight at the kill, the restarted gateway's recovery report and a timeline
(``pytest -s``).  Measured here (Python 3.11, 2 cores shared with other jobs), the kill came 0.2-0.7 s into
the burst with 40-100 answers out; the figures in flight are in each test's docstring.  Messages acknowledged
and not answered are answered after the restart from the inbox (``recovery.inbox``), the outbox
(``resent``: the reply was committed, not sent) or by re-running their run (``rerun``).  Up to one answer
per chat came twice: a reply sent whose "sent" mark was not written yet is sent again (at least once).  A
restart took 0.4-1.4 s; a Telegram test 7-9 s (5-6 s of it importing aiogram in the subprocess), a Slack
one 3-5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import signal
import sqlite3
import sys
import time
from asyncio.subprocess import PIPE
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.channels._intake_gateway import SLACK_SIGNING_SECRET, WEBHOOK_SECRET
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers.net import free_port
from tests.waiting import CEILING_S

pytestmark = pytest.mark.xdist_group("crash")

SCRIPT = Path(__file__).with_name("_intake_gateway.py")
ROOT = Path(__file__).resolve().parents[2]

CHATS = 50
PER_CHAT = 6
"""300 messages in all, ``c{chat}-m{n}``."""
LANE_GAP_S = 0.15
"""Between two messages of one chat (webhooks, Socket Mode): the platform's pace; the burst lasts about a second."""
KILL_AFTER = 40
"""Answers seen before the SIGKILL (well before the burst is over)."""
START_TIMEOUT_S = CEILING_S * 2
"""Ceilings, not budgets: a gateway starts in seconds, a busy machine may take many times longer."""
SETTLE_TIMEOUT_S = CEILING_S * 2
"""After the restart: everything delivered and answered (seconds on an idle machine)."""


@dataclass
class Sent:
    """One message of the burst, and what the platform knows about it."""

    chat: str
    """The chat id as the fake records the answers (Telegram ``chat_id``, Slack ``channel``)."""
    text: str
    key: str
    """Its ``inbox.event_key``."""
    payload: dict[str, Any]
    """What the platform delivers (a Telegram update, a Slack event callback)."""
    delivered: bool = False
    acked: bool = False
    attempts: int = 0

    @property
    def answer(self) -> tuple[str, str]:
        return self.chat, "echo: " + self.text


# -- the gateway subprocess ---------------------------------------------------------------------------


class Gateways:
    """The gateway subprocess (the one SIGKILLed) and the standby it forked (the restart on the same database).

    The standby has imported everything already, so the restart takes a fraction of a second, not the
    seconds aiogram takes to import.  Both print to the same stdout; the subprocess' log goes to a file.
    """

    def __init__(self, tmp: Path, mode: str, fake_url: str, http_port: int) -> None:
        self.tmp, self.mode, self.fake_url, self.http_port = tmp, mode, fake_url, http_port
        self.proc: asyncio.subprocess.Process | None = None
        self.standby: int | None = None
        self.log = tmp / "gateway.log"
        self.release = tmp / "release"
        """Made after the kill: until then each chat's last message is acknowledged and left unanswered."""

    async def start(self) -> dict[str, Any]:
        """Spawn the gateway; its "ready" line."""
        env = {
            **os.environ,
            "INTAKE_MODE": self.mode,
            "FAKE_URL": self.fake_url,
            "DATA_DIR": str(self.tmp / "data"),
            "HTTP_PORT": str(self.http_port),
            "STANDBY": "1",
            "HOLD_SUFFIX": f"-m{PER_CHAT - 1}",  # each chat's last message waits for RELEASE_FILE to be answered
            "RELEASE_FILE": str(self.release),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        with self.log.open("a") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, str(SCRIPT), stdin=PIPE, stdout=PIPE, stderr=log, cwd=self.tmp, env=env
            )
        self.standby = (await self._line())["standby"]
        return await self._line()

    async def crash(self) -> None:
        """SIGKILL the gateway, and wait until it is gone."""
        assert self.proc is not None
        self.proc.kill()
        # Not proc.wait(): that also waits for stdout to close, and the standby holds it.
        async with asyncio.timeout(CEILING_S):
            while self.proc.returncode is None:  # noqa: ASYNC110 - set by asyncio's child watcher
                await asyncio.sleep(0.01)
        assert self.proc.returncode == -signal.SIGKILL

    async def restart(self) -> dict[str, Any]:
        """Start the standby's gateway; its "ready" line."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"start\n")
        await self.proc.stdin.drain()
        ready = await self._line()
        assert ready["pid"] == self.standby
        return ready

    async def stop(self) -> None:
        """Stop the restarted gateway gracefully (SIGTERM); it is gone when its stdout closes."""
        assert self.standby is not None
        os.kill(self.standby, signal.SIGTERM)
        assert await self._line(eof=True) is None, "nothing more after the ready line"
        self.standby = None

    async def close(self) -> None:
        """Whatever happened: nothing is left running."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
        if self.standby is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.standby, signal.SIGKILL)
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()  # a standby never started exits at the end of its input
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), CEILING_S)

    async def _line(self, *, eof: bool = False) -> Any:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), START_TIMEOUT_S)
        if not line and not eof:
            raise AssertionError(f"the gateway exited: {self.log.read_text()[-3000:]}")
        return json.loads(line) if line else None


def inbox_rows(tmp: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(tmp / "data" / "bot.db")) as db:
        return [(key, status) for key, status in db.execute("SELECT event_key, status FROM inbox")]


def lanes(messages: list[Sent]) -> Iterator[list[Sent]]:
    """The messages per chat, in send order."""
    chats: dict[str, list[Sent]] = {}
    for message in messages:
        chats.setdefault(message.chat, []).append(message)
    yield from chats.values()


async def deliver_in_lanes(messages: list[Sent], send: Callable[[Sent], Awaitable[bool]]) -> None:
    """Each chat's messages one after another (the next once the previous is acknowledged), chats at once.

    ``send`` delivers one attempt and says whether it was acknowledged; anything else is retried (the
    platform's redelivery, same ids) until it is.
    """

    async def lane(chat: list[Sent]) -> None:
        for message in chat:
            message.delivered = True
            while True:
                message.attempts += 1
                try:
                    if await send(message):
                        message.acked = True
                        break
                except (aiohttp.ClientError, ConnectionError, TimeoutError, RuntimeError):
                    pass
                await asyncio.sleep(0.05)
            await asyncio.sleep(LANE_GAP_S)  # fake platform: the pace people write at

    await asyncio.gather(*(lane(chat) for chat in lanes(messages)))


# -- one crash test, whatever the platform ----------------------------------------------------------


@dataclass
class Platform:
    """What a crash test needs from a fake platform."""

    url: str
    messages: list[Sent]
    deliver: Callable[[], Awaitable[None]]
    """The whole burst, redeliveries included: returns once every message was acknowledged."""
    answers: Callable[[], list[tuple[str, str]]]
    """(chat, text) of every message the bot sent, in order."""
    wait: Callable[[Callable[[], Any], float], Awaitable[Any]]
    sync_acks: Callable[[], None] = lambda: None
    """Bring ``Sent.acked`` up to date (polling: from the latest getUpdates offset)."""


@dataclass
class Outcome:
    at_kill: dict[str, int]
    """delivered (polling: queued at Telegram), acked, answered, acked but unanswered, delivered but unacked."""
    recovery: dict[str, Any]
    """The restarted gateway's recovery report (``inbox``: events committed before the crash, not handled)."""
    timeline: dict[str, float]
    """Seconds since the test began: gateway ready, kill, restarted, everything delivered, answered, stopped."""


async def crash_mid_burst(tmp: Path, mode: str, platform: Platform, http_port: int = 0) -> Outcome:
    gateways = Gateways(tmp, mode, platform.url, http_port)
    messages = platform.messages
    burst: asyncio.Task[None] | None = None
    began, timeline = time.monotonic(), {}

    def answered() -> set[tuple[str, str]]:
        return set(platform.answers())

    def tally() -> dict[str, int]:
        platform.sync_acks()
        done = answered()
        return {
            "delivered": sum(m.delivered for m in messages),
            "acked": sum(m.acked for m in messages),
            "answered": len(done),
            "acked_unanswered": sum(m.acked and m.answer not in done for m in messages),
            "unacked": sum(m.delivered and not m.acked for m in messages),
        }

    def midway() -> bool:
        """Answers out and messages acknowledged and not answered yet (each chat's last message is held until
        after the kill, so that comes surely, however fast the gateway is)."""
        counts = tally()
        return counts["answered"] >= KILL_AFTER and counts["acked_unanswered"] >= 5

    def mark(step: str) -> None:
        timeline[step] = round(time.monotonic() - began, 2)

    try:
        await gateways.start()
        mark("ready")
        burst = asyncio.create_task(platform.deliver())
        async with asyncio.timeout(CEILING_S):
            while not midway():  # noqa: ASYNC110 - acknowledgements happen here, not in the fake
                await asyncio.sleep(0.005)
        await gateways.crash()
        mark("killed")
        at_kill = tally()
        gateways.release.touch()
        assert at_kill["answered"] < len(messages), "the kill came after the burst"

        ready = await gateways.restart()
        mark("restarted")
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        await asyncio.wait_for(burst, deadline - time.monotonic())
        mark("all_acked")
        platform.sync_acks()
        wanted = {m.answer for m in messages}
        await platform.wait(lambda: wanted <= answered(), deadline - time.monotonic())
        mark("all_answered")
        await gateways.stop()
        mark("stopped")
    finally:
        if burst is not None:
            burst.cancel()
            await asyncio.gather(burst, return_exceptions=True)
        await gateways.close()

    check(messages, platform.answers(), inbox_rows(tmp))
    outcome = Outcome(at_kill, ready["recovery"], timeline)
    answers = platform.answers()
    recovery = {k: len(v) if isinstance(v, list) else v for k, v in outcome.recovery.items() if v}
    print(
        f"\n{mode}: at the kill {at_kill}; recovery {recovery}; requests retried "
        f"{sum(m.attempts > 1 for m in messages)}; answers repeated {len(answers) - len(set(answers))}; "
        f"timeline {timeline}"
    )
    return outcome


def check(messages: list[Sent], answers: list[tuple[str, str]], rows: list[tuple[str, str]]) -> None:
    assert all(m.acked for m in messages), "the platform delivered everything in the end"
    # Stored exactly once: one row per acknowledged message, no other rows, all handled.
    keys = [key for key, _ in rows]
    assert len(keys) == len(set(keys))
    assert sorted(keys) == sorted(m.key for m in messages if m.acked)
    assert {status for _, status in rows} == {"done"}
    # Answered, with exactly its echo; nothing answered that was never sent.
    expected = {m.answer for m in messages}
    assert [a for a in answers if a not in expected] == []
    assert [m.text for m in messages if m.acked and m.answer not in set(answers)] == []
    # Per chat, the first answers come in send order (a repeat after the crash may follow later).
    for chat in lanes(messages):
        firsts = list(dict.fromkeys(text for c, text in answers if c == chat[0].chat))
        assert firsts == [m.answer[1] for m in chat], f"chat {chat[0].chat} answered out of order"


# -- Telegram ---------------------------------------------------------------------------------------


def telegram_messages(fake: FakeTelegram) -> list[Sent]:
    """The burst, round by round over the chats."""
    messages = []
    update_ids = iter(range(10_000, 20_000))
    for n in range(PER_CHAT):
        for c in range(CHATS):
            chat_id, text = 1000 + c, f"c{c}-m{n}"
            update = {"update_id": next(update_ids), **fake.message(text, chat_id=chat_id, user_id=chat_id)}
            messages.append(Sent(str(chat_id), text, f"telegram:{update['update_id']}", update))
    return messages


def telegram_answers(fake: FakeTelegram) -> Callable[[], list[tuple[str, str]]]:
    return lambda: [(str(c.params["chat_id"]), c.params["text"]) for c in fake.of("sendMessage")]


async def test_telegram_polling_crash_loses_nothing_confirmed(tmp_path: Path) -> None:
    """In flight at the kill: 10-30 updates confirmed (below the offset) and not answered; 80-150 queued at
    Telegram and not confirmed (some of them handed out, some committed), handed out again after the restart."""
    fake = FakeTelegram()
    await fake.start()
    messages = telegram_messages(fake)

    def confirmed() -> int:
        """Every update below the offset of the bot's latest getUpdates is confirmed."""
        return max((int(c.params.get("offset") or 0) for c in fake.of("getUpdates", ok=None)), default=0)

    def sync_acks() -> None:
        offset = confirmed()
        for m in messages:
            m.acked = m.payload["update_id"] < offset

    async def deliver() -> None:
        # The users write while the bot polls: 10 updates every 30 ms (300 in about a second).
        for i in range(0, len(messages), 10):
            for m in messages[i : i + 10]:
                m.delivered = True
                fake.push(m.payload)
            await asyncio.sleep(0.03)
        # Telegram keeps what is unconfirmed and hands it out again: done when the bot confirmed everything.
        await fake.wait_for(lambda: not fake.pending, SETTLE_TIMEOUT_S)

    platform = Platform(fake.base_url, messages, deliver, telegram_answers(fake), fake.wait_for, sync_acks)
    try:
        await crash_mid_burst(tmp_path, "telegram-polling", platform)
    finally:
        await fake.stop()


async def test_telegram_webhook_crash_loses_nothing_answered_200(tmp_path: Path) -> None:
    """In flight at the kill: 9-58 updates answered 200 and not answered yet; 50 requests (one per chat)
    unanswered, 16-50 of them already committed (their retry is a duplicate)."""
    fake = FakeTelegram()
    await fake.start()
    messages = telegram_messages(fake)
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/webhook"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:

        async def send(message: Sent) -> bool:
            headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
            async with http.post(url, json=message.payload, headers=headers) as response:
                return response.status == 200

        platform = Platform(
            fake.base_url, messages, lambda: deliver_in_lanes(messages, send), telegram_answers(fake), fake.wait_for
        )
        try:
            await crash_mid_burst(tmp_path, "telegram-webhook", platform, port)
        finally:
            await fake.stop()


# -- Slack ------------------------------------------------------------------------------------------


def slack_messages() -> list[Sent]:
    messages = []
    for n in range(PER_CHAT):
        for c in range(CHATS):
            channel, text, ts = f"D{1000 + c}", f"c{c}-m{n}", f"1700000000.{c:03d}{n:03d}"
            event = {"type": "message", "channel_type": "im", "channel": channel, "user": f"U{1000 + c}"}
            body = {
                "token": "legacy",
                "team_id": "T1",
                "api_app_id": "A1",
                "type": "event_callback",
                "event_id": f"Ev{c:03d}{n:03d}",
                "event_time": int(time.time()),
                "event": {**event, "text": text, "ts": ts},
            }
            messages.append(Sent(channel, text, f"slack:{channel}:{ts}", body))
    return messages


def slack_answers(fake: FakeSlack) -> Callable[[], list[tuple[str, str]]]:
    return lambda: [(p["channel"], p["text"]) for p in fake.posts()]


def sign(body: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    digest = hmac.new(SLACK_SIGNING_SECRET.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


async def test_slack_http_crash_loses_nothing_answered_200(tmp_path: Path) -> None:
    """In flight at the kill: 7-50 events answered 200 and not answered yet; 50 requests (one per chat)
    without a 200, up to 49 of them already committed; all retried with ``X-Slack-Retry-Num``."""
    fake = FakeSlack()
    await fake.start()
    messages = slack_messages()
    port = free_port()
    url = f"http://127.0.0.1:{port}/slack/events"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:

        async def send(message: Sent) -> bool:
            body = json.dumps(message.payload)
            headers = {"Content-Type": "application/json", **sign(body)}
            if message.attempts > 1:  # Slack's retry of an event it got no 200 for
                headers |= {"X-Slack-Retry-Num": str(message.attempts - 1), "X-Slack-Retry-Reason": "http_error"}
            async with http.post(url, data=body.encode(), headers=headers) as response:
                return response.status == 200

        platform = Platform(
            fake.base_url, messages, lambda: deliver_in_lanes(messages, send), slack_answers(fake), fake.wait_for
        )
        try:
            await crash_mid_burst(tmp_path, "slack-http", platform, port)
        finally:
            await fake.stop()


async def test_slack_socket_mode_crash_loses_nothing_acked(tmp_path: Path) -> None:
    """In flight at the kill: 13-30 envelopes acked and not answered yet; 50 not acked (one per chat), 20-50
    of them pushed on the dead connection and pushed again (same envelope id) on the new one."""
    fake = FakeSlack()
    await fake.start()
    messages = slack_messages()

    async def send(message: Sent) -> bool:
        envelope = "env-" + message.payload["event_id"]  # a redelivery keeps the envelope id
        await fake.push(message.payload, envelope_id=envelope, retry_attempt=message.attempts - 1)
        # Slack waits 3 s for an ack (1 s here, to be quick); unacknowledged, it comes again (once connected).
        await fake.wait_ack(envelope, timeout=1.0)
        return True

    platform = Platform(
        fake.base_url, messages, lambda: deliver_in_lanes(messages, send), slack_answers(fake), fake.wait_for
    )
    try:
        await crash_mid_burst(tmp_path, "slack-socket", platform)
    finally:
        await fake.stop()
