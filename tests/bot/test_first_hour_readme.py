"""A first hour with the bot, following only the README, as subprocesses in a temp folder with a fresh HOME and no
network (the Telegram Bot API is a fake on 127.0.0.1, reached by the real aiogram in the bot's process):

``bot -h`` → ``bot init`` → ``bot doctor`` (no ``.env`` yet: what is missing and where it looked) → ``.env`` with a
malformed token (refused before aiogram loads, never shown) → a mistyped key (a did-you-mean) → the right ``.env`` →
``bot doctor`` passes → ``bot chat`` through every "Try:" row of the README → ``bot trace`` (the last chat) from
another folder → ``bot run`` (says what it loads, then pairing a colleague in Telegram) → stopped by SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.waiting import CEILING_S, eventually

pytestmark = [pytest.mark.xdist_group("first-hour"), pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
ADMIN, COLLEAGUE = 111, 222
CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4})\b")
TRY_ROWS = [
    "what time is it in Tokyo?",
    "remind me in 2 minutes to stretch",
    "write hello to notes.txt",
    "1",  # ✅ Approve
    "read notes.txt",
    "list my files",
    "plan a weekend trip to Paris",
    "1",  # ✅ Approve the plan
    "@react help me choose a laptop",
    "1",  # Price
    "remember that I like green tea",
    "what do you remember about me?",
    "/routing",
    "/agents",
    "/trace",
    "/status",
    "/model",
    "/new",
]


class Seat:
    """Where a new operator sits: a project folder, a fresh HOME, and every output kept to check for the token."""

    def __init__(self, tmp_path: Path) -> None:
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.outputs: list[str] = []

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "OPENAI_", "TELEGRAM_"))}
        keep.pop("DATABASE_URL", None)
        keep.pop("REDIS_URL", None)
        return {**keep, "HOME": str(self.home), "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120"}

    async def bot(self, *args: str, cwd: Path | None = None, stdin: str = "") -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", *args, cwd=cwd or self.project, env=self.env(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 300)
        self.outputs += [out.decode(), err.decode()]
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()


async def test_the_first_hour_following_the_readme(tmp_path: Path) -> None:
    seat = Seat(tmp_path)
    fake = FakeTelegram()
    await fake.start()
    try:
        await _first_hour(seat, fake)
    finally:
        await fake.stop()
    for text in [*seat.outputs, (seat.project / "data" / "bot.log").read_text()]:
        assert TOKEN not in text and TOKEN.split(":")[1] not in text, "a token is never shown"


async def _first_hour(seat: Seat, fake: FakeTelegram) -> None:
    # bot -h
    code, out, _err = await seat.bot("-h")
    assert code == 0 and all(word in out for word in ("init", "doctor", "run", "trace", "chat"))
    assert (await seat.bot("trace", "-h"))[0] == 0

    # bot init: a config and .env.example, and what to do next.
    code, out, err = await seat.bot("init", "--yes", "--channels", "console,telegram", "--model", "offline",
                                    "--admin", f"telegram:{ADMIN}")  # fmt: skip
    assert code == 0, err
    assert "copy .env.example to .env" in out and "TELEGRAM_BOT_TOKEN" in out and "bot doctor" in out
    assert "TELEGRAM_BOT_TOKEN=" in (seat.project / ".env.example").read_text()

    # bot doctor before .env: the variable, the file and field, and where .env was looked for.
    code, out, _err = await seat.bot("doctor")
    assert code == 1
    assert "config/bot.yaml: channels.telegram.token: ${TELEGRAM_BOT_TOKEN} is not set" in out
    assert "looked for" in out and f"{seat.project / '.env'}" in out
    assert "fix: edit config/bot.yaml, or set the variable named (export it, or in .env)" in out

    # A malformed token: named at once, before aiogram is loaded, never shown.
    env_file = seat.project / ".env"
    api = f"BOT_CHANNELS__TELEGRAM__API_BASE={fake.base_url}\n"
    env_file.write_text(f"TELEGRAM_BOT_TOKEN=bot{TOKEN.split(':')[1]}\n{api}")
    code, out, _err = await seat.bot("doctor")
    assert code == 1 and "✗ telegram: channels.telegram.token is not a bot token" in out
    began = time.monotonic()
    code, _out, err = await seat.bot("run")
    assert code == 2 and "channels.telegram.token is not a bot token" in err and "aiogram" not in err
    assert time.monotonic() - began < 30, "refused without loading the Telegram library"

    # A mistyped key: the nearest one that exists.
    config = seat.project / "config" / "bot.yaml"
    written = config.read_text()
    config.write_text(written.replace("    mention_policy: mention", "    mention_polcy: mention"))
    env_file.write_text(f"TELEGRAM_BOT_TOKEN={TOKEN}\n{api}")
    code, out, _err = await seat.bot("doctor")
    assert code == 1 and "channels.telegram.mention_polcy: unknown field (did you mean 'mention_policy'?)" in out
    config.write_text(written)

    # The right .env: every check passes (the token's answer from the fake Bot API).
    code, out, _err = await seat.bot("doctor")
    assert code == 0, out
    assert f"{env_file} (2 variables)" in out and "✓ telegram token: the bot @test_bot" in out
    assert "✓ agents: 3 valid" in out

    # The README's "Try:" rows, in the terminal.
    code, out, err = await seat.bot("chat", stdin="\n".join(TRY_ROWS) + "\n")
    assert code == 0, err
    assert "only understand a few requests" not in out, "every suggestion works as typed"
    for expected in ("Asia/Tokyo", "scheduled", "write_file", "hello", "notes.txt",
                     "The plan for a weekend trip to Paris is done", "what matters most to you", "green tea",
                     "Last message here:", "@react", "🧭 Trace", "• model: offline", "Admins switch this chat's",
                     "🆕 New conversation"):  # fmt: skip
        assert expected in out, (expected, out)
    assert (seat.project / "data" / "workspace" / "notes.txt").read_text() == "hello\n"
    assert "Ready in" in err and "you> Ready" not in out + err

    # From another folder, with -c: the project's database, and its last chat by default.
    elsewhere = seat.project.parent / "elsewhere"
    elsewhere.mkdir()
    code, out, err = await seat.bot("-c", str(seat.project / "config" / "bot.yaml"), "trace", cwd=elsewhere)
    assert code == 0 and "the last chat traced: console:local" in err and "🧭 Trace" in out, err
    assert not (elsewhere / "data").exists()

    await _run_with_telegram(seat, fake)


async def _run_with_telegram(seat: Seat, fake: FakeTelegram) -> None:
    began = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", cwd=seat.project, env=seat.env(),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    lines: list[tuple[float, str]] = []

    async def read() -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            lines.append((time.monotonic() - began, raw.decode().rstrip()))

    reader = asyncio.create_task(read())
    try:
        await eventually(lambda: any("Ready in" in text for _, text in lines), what="the bot to start")
        said = [text for _, text in lines]
        first = next(at for at, text in lines if text.startswith("Starting the bot"))
        assert said[0].startswith("Starting the bot: console, telegram"), said
        loading = said.index("  telegram: loading aiogram (a few seconds)…")
        assert said[loading + 1].startswith("  telegram: aiogram loaded in "), said
        assert any(text.startswith("  channel telegram: ready") for text in said)
        assert first < 15, f"the first line came {first:.1f} s after the command"

        # A colleague writes; the admin lets them in from their own chat; they are answered at once.
        fake.push(fake.message("hi, can I use you?", chat_id=COLLEAGUE, user_id=COLLEAGUE, name="Bob"))
        offer = await fake.wait_for(lambda: _sent(fake, COLLEAGUE, "give an admin of this bot this code"))
        found = CODE.search(offer)
        assert found and f"Your user id is {COLLEAGUE}" in offer
        fake.push(fake.message(f"/pair {found.group(1)}", chat_id=ADMIN, user_id=ADMIN))
        await fake.wait_for(lambda: _sent(fake, ADMIN, f"Paired telegram user {COLLEAGUE} (Bob)"))
        await fake.wait_for(lambda: _sent(fake, COLLEAGUE, "An admin let you in"))
        fake.push(fake.message("what time is it in Tokyo?", chat_id=COLLEAGUE, user_id=COLLEAGUE, name="Bob"))
        answer = await fake.wait_for(lambda: _sent(fake, COLLEAGUE, "Asia/Tokyo"))
        assert answer.startswith("[offline model]")
        fake.push(fake.message("/status", chat_id=ADMIN, user_id=ADMIN))
        await fake.wait_for(lambda: _sent(fake, ADMIN, f"Status of telegram:{ADMIN}"))
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), CEILING_S)
        await reader
        seat.outputs.append("\n".join(text for _, text in lines))
    assert code == 0, lines[-5:]


def _sent(fake: FakeTelegram, chat_id: int, text: str) -> str | None:
    return next((t for t in fake.sent_texts(chat_id) if text in t), None)
