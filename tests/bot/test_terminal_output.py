"""Text that reaches a terminal has its control characters shown, not obeyed: ``bot agents run``'s lines, the
log lines (text and JSON), ``bot route``; the console's own tests are in tests/channels/test_console.py."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agents.models.scripted import ScriptedModel, call
from bot.cli.logs import formatter
from bot.cli.run import run_once
from channels.terminal import terminal_safe

ATTACK = "\x1b[2J\x1b]0;root@bank\x07\x1b[31mPassword: \x1b[0m\r\u202eevil\x9b31m\x7f"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\x7f")


def clean(text: str) -> bool:
    return not any(raw in text for raw in RAW)


def test_terminal_safe_shows_what_a_terminal_obeys_and_keeps_the_rest() -> None:
    assert terminal_safe(ATTACK) == (
        "\\u001b[2J\\u001b]0;root@bank\\u0007\\u001b[31mPassword: \\u001b[0m\\u000d\\u202eevil\\u009b31m\\u007f"
    )
    kept = "line one\n\tindented 👩‍💻 café\u00a010 € — 中文 العربية"
    assert terminal_safe(kept) is kept
    obeyed = {*range(0x20), 0x7F, *range(0x80, 0xA0), 0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F)}
    obeyed |= set(range(0x2066, 0x206A))
    obeyed -= {0x09, 0x0A}
    for code in range(0x3000):
        expected = f"\\u{code:04x}" if code in obeyed else chr(code)
        assert terminal_safe(chr(code)) == expected, hex(code)
    # JSON stays JSON: what is escaped lies inside its strings.
    line = terminal_safe(json.dumps({"message": ATTACK}, ensure_ascii=False))
    assert json.loads(line) == {"message": ATTACK} and clean(line)


def test_log_lines_show_control_characters(tmp_path: Path) -> None:
    record = logging.LogRecord(
        "bot.media", logging.WARNING, __file__, 1, "could not download %s: %s", (ATTACK, "x"), None
    )
    text = formatter("text").format(record)
    assert clean(text) and "could not download \\u001b[2J" in text
    as_json = formatter("json").format(record)
    assert clean(as_json) and json.loads(as_json)["message"].startswith("could not download " + ATTACK)


async def test_bot_agents_run_prints_tool_output_and_answers_safely(make_settings: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "data" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("Meeting at 10.\n" + ATTACK)
    settings = make_settings(channels={"console": {"enabled": True, "streaming": False}})
    model = ScriptedModel([call("read_file", {"path": "notes.txt"}), "Your notes: Meeting at 10.\n" + ATTACK])
    out = io.StringIO()
    assert await run_once(settings, "react", "read notes.txt", stdout=out, model=model) == 0
    text = out.getvalue()
    assert "✓ Your notes: Meeting at 10.\n\\u001b[2J\\u001b]0;root@bank\\u0007" in text, text
    assert clean(text), repr(text)


def test_bot_route_prints_safely(tmp_path: Path, monkeypatch: Any) -> None:
    from bot.cli.main import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["route", "--json", "--strategy", "rule", "remind me \u202eevil\x9b"])
    assert result.exit_code == 0, result.output
    assert clean(result.output) and "\\u202eevil\\u009b" in result.output


def test_bot_eval_prints_answers_safely(tmp_path: Path) -> None:
    """A failed check quotes the model's answer: its escape sequences are shown, in the progress lines and the
    report."""
    from tests.evals.cli import bot_eval

    answer = json.dumps(f"done {ATTACK}")
    suite = (
        "name: escapes\ncases:\n  - id: loud\n    script:\n      - " + answer + "\n"
        "    turns:\n      - user: '@chat hello'\n        expect: {answer: nothing like this}\n"
    )
    (tmp_path / "escapes.yaml").write_text(suite)
    done = bot_eval(tmp_path, str(tmp_path / "escapes.yaml"), "--model", "scripted")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "done" in done.stdout and clean(done.stdout) and clean(done.stderr)
