"""The console channel: lines in, replies out, numbered buttons, and `bot chat` in a pipe."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bot.events import Action, Button, ChatKey, InboundMessage, OutboundMessage
from channels.console import ConsoleChannel
from tests.conftest import RecordingInbox
from tests.waiting import CEILING_S, eventually

CHAT = ChatKey(channel="console", chat_id="local")


async def test_buttons_print_as_numbered_choices_and_number_or_label_presses() -> None:
    out = io.StringIO()
    console = ConsoleChannel(stdin=io.StringIO(""), stdout=out, interactive=False)
    prompt = OutboundMessage(
        chat=CHAT,
        text="Run delete_cache?",
        buttons=((Button(label="Approve", payload="v1:a:n:ok"), Button(label="Deny", payload="v1:a:n:no")),),
    )
    ref = await console.send(prompt)
    assert out.getvalue() == "bot> Run delete_cache?\n[1] Approve  [2] Deny\n"
    first = console._event_for("1")
    assert isinstance(first, Action) and first.payload == "v1:a:n:ok" and first.message_ref == ref
    second = console._event_for("deny")
    assert isinstance(second, Action) and second.payload == "v1:a:n:no"
    plain = console._event_for("3")
    assert isinstance(plain, InboundMessage) and plain.text == "3"
    # Once the prompt is edited (resolved), numbers are plain text again.
    await console.send(OutboundMessage(chat=CHAT, text="Approved.", edit_of=ref))
    assert isinstance(console._event_for("1"), InboundMessage)


async def test_reads_lines_until_end_of_input() -> None:
    bus = RecordingInbox()
    console = ConsoleChannel(stdin=io.StringIO("hello\n\n  second  \n"), stdout=io.StringIO(), interactive=False)
    await console.start(bus)  # type: ignore[arg-type]
    await asyncio.wait_for(console.finished.wait(), CEILING_S)
    texts = [e.text for e in bus.events if isinstance(e, InboundMessage)]
    assert texts == ["hello", "second"]
    assert len({e.id for e in bus.events}) == 2
    assert all(e.is_direct for e in bus.events if isinstance(e, InboundMessage))


def _run_bot(
    args: list[str], stdin: str, cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "GOOGLE_"))}
    env["HOME"] = str(cwd)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_bot_chat_in_a_pipe(tmp_path: Path) -> None:
    result = _run_bot(["chat"], "hello\n/whoami\n", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bot> [offline model]") and "hello" in lines[0]
    assert lines[1].startswith("bot> You are console-user")
    assert "offline model" in result.stderr
    assert (tmp_path / "data" / "bot.db").is_file()


def test_bot_chat_history_survives_a_restart(tmp_path: Path) -> None:
    assert _run_bot(["chat"], "first\n", tmp_path).returncode == 0
    result = _run_bot(["chat"], "/reset\n", tmp_path)
    assert "cleared" in result.stdout


def test_bot_chat_reports_a_bad_config(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "bot.yaml").write_text("bus: {max_pending: 0}\n")
    result = _run_bot(["chat"], "hello\n", tmp_path)
    assert result.returncode == 2
    assert "config/bot.yaml: bus.max_pending" in result.stderr
    assert "Traceback" not in result.stderr


class _Timed(io.StringIO):
    """stdout that notes when each piece was written."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.pieces.append((asyncio.get_running_loop().time(), text))
        return super().write(text)


async def test_an_answer_prints_as_the_model_writes_it(make_settings: Any) -> None:
    from agents.models.scripted import ScriptedModel, Streamed
    from bot.gateway.app import Gateway

    out = _Timed()
    console = ConsoleChannel(stdin=io.StringIO("tell me a story\n"), stdout=out, interactive=False)
    settings = make_settings(channels={"console": {"enabled": True}}, routing={"strategy": "rule"})

    async def printed(k: int) -> None:  # the next piece once the last one is on the terminal (no race with time)
        await eventually(lambda: len([p for _, p in out.pieces if p.strip()]) >= k, what=f"{k} pieces printed")

    model = ScriptedModel([Streamed(("Once ", "upon ", "a time."), delay_s=0.3, gate=printed)])
    gateway = Gateway(settings, model=model, channels=[console])
    console._join = gateway.settled
    await gateway.start()
    try:
        await asyncio.wait_for(console.finished.wait(), CEILING_S)
    finally:
        await gateway.stop(timeout=5)
    model.assert_complete()
    assert out.getvalue() == "bot> Once upon a time.\n", "the answer once, on one line"
    answer = [(t, piece) for t, piece in out.pieces if piece.strip()]
    assert [piece for _, piece in answer] == ["bot> Once ", "upon ", "a time.\n"], "each piece as it came"
    assert answer[-1][0] - answer[0][0] > 0.5


def test_the_offline_demo_flows_in_the_console(tmp_path: Path) -> None:
    lines = [
        "what time is it in Tokyo?",
        "write hello to notes.txt",
        "1",  # Approve
        "plan a weekend trip to Paris",
        "1",  # Approve the plan
        "@react help me choose a laptop",
        "Price",
    ]
    result = _run_bot(["chat"], "\n".join(lines) + "\n", tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Asia/Tokyo" in out
    assert "write_file" in out and (tmp_path / "data" / "workspace" / "notes.txt").read_text() == "hello\n"
    assert "Plan (v1)" in out and "weekend trip to Paris is done" in out
    assert "what matters most to you?" in out and "You chose “Price”" in out
    assert "Overall goal" not in out and "Do this step now" not in out, "no internal prompt echoed"


NOTES = "Meeting at 10.\n\x1b[2J\x1b[H\x1b]0;root@bank\x07\x1b[31mPassword: \x1b[0m\r\u202eevil\x9b31m\tend\n"


def test_a_file_read_on_the_console_cannot_drive_the_terminal(tmp_path: Path) -> None:
    workspace = tmp_path / "data" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text(NOTES)
    result = _run_bot(["chat"], "read notes.txt\n", tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Meeting at 10." in out, out
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert raw not in out, f"{raw!r} reached the terminal: {out!r}"
    assert "\\u001b[2J\\u001b[H\\u001b]0;root@bank\\u0007\\u001b[31mPassword: " in out
    assert "\\u000d\\u202eevil\\u009b31m\tend" in out, "tabs stay; \\r, bidi and C1 controls are shown"


async def test_every_printed_part_is_terminal_safe_and_the_bots_own_layout_stays() -> None:
    out = io.StringIO()
    console = ConsoleChannel(stdin=io.StringIO(""), stdout=out, interactive=True)
    await console.send(
        OutboundMessage(
            chat=CHAT,
            text="Run \x1b[8mhidden\x1b[0m?",
            buttons=((Button(label="Approve\x1b[2K", payload="v1:a:n:ok"),),),
        )
    )
    assert out.getvalue() == "\rbot> Run \\u001b[8mhidden\\u001b[0m?\n[1] Approve\\u001b[2K\n"
    out.truncate(0)
    out.seek(0)
    ref = await console.send(OutboundMessage(chat=CHAT, text="Once \x1b]0;", kind="draft"))
    await console.send(OutboundMessage(chat=CHAT, text="Once \x1b]0;title\x07 👩‍💻 café\u00a0!", edit_of=ref))
    assert out.getvalue() == "\rbot> Once \\u001b]0;title\\u0007 👩‍💻 café\u00a0!\n", "emoji, accents, nbsp kept"


class _Stdin:
    """A terminal's input the test types into: the console's reader waits at ``you>`` until a line comes."""

    def __init__(self) -> None:
        read, self._write = os.pipe()
        self.file = os.fdopen(read, "r")

    def type(self, line: str) -> None:
        os.write(self._write, line.encode())

    def close(self) -> None:
        os.close(self._write)


async def test_an_unprompted_message_at_the_prompt_draws_the_prompt_again() -> None:
    """A reminder that arrives while the person sits at ``you>`` leaves a fresh ``you>`` under it; an answer to a
    line typed does not (the reader prints the next prompt itself); in a pipe there is no prompt at all."""
    stdin, out, bus = _Stdin(), io.StringIO(), RecordingInbox()

    async def answered() -> None:  # the gateway answers the line typed before the reader goes on
        await console.send(OutboundMessage(chat=CHAT, text="hi"))

    console = ConsoleChannel(stdin=stdin.file, stdout=out, interactive=True, join=answered)
    await console.start(bus)  # type: ignore[arg-type]
    try:
        await eventually(lambda: out.getvalue() == "you> ", what="the first prompt")
        await console.send(OutboundMessage(chat=CHAT, text="⏰ Reminder: call mom"))
        assert out.getvalue() == "you> \rbot> ⏰ Reminder: call mom\nyou> "
        ref = await console.send(OutboundMessage(chat=CHAT, text="A job's ", kind="draft"))
        await console.send(OutboundMessage(chat=CHAT, text="A job's answer.", edit_of=ref))
        assert out.getvalue().endswith("you> \rbot> A job's answer.\nyou> "), out.getvalue()
        stdin.type("hello\n")
        await eventually(lambda: out.getvalue().endswith("you> \rbot> hi\nyou> "), what="the answer, one prompt")
        assert out.getvalue().count("you> ") == 4
    finally:
        stdin.close()
        await asyncio.wait_for(console.finished.wait(), CEILING_S)
        stdin.file.close()
    piped = io.StringIO()
    console = ConsoleChannel(stdin=io.StringIO(""), stdout=piped, interactive=False)
    await console.send(OutboundMessage(chat=CHAT, text="⏰ Reminder: call mom"))
    assert piped.getvalue() == "bot> ⏰ Reminder: call mom\n"
