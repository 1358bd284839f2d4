"""The traps of a new operator's first hour, each closed: clear errors, nothing silent."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.cli.main import app
from bot.gateway.app import Gateway
from bot.retry import Backoff
from tests.conftest import RecordingChannel

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    full.update(HOME=str(cwd), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_config_before_or_after_the_command_and_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("bot: {name: from-my-file}\n")
    runner = CliRunner()
    for argv in (["-c", "mine.yaml", "config", "show"], ["config", "show", "-c", "mine.yaml"]):
        result = runner.invoke(app, argv, env={"HOME": str(tmp_path)})
        assert result.exit_code == 0 and "name: from-my-file" in result.output, argv
    for argv in (["-c", "nope.yaml", "config", "show"], ["-c", "nope.yaml", "mcp", "list"]):
        result = runner.invoke(app, argv, env={"HOME": str(tmp_path)})
        assert result.exit_code == 2 and "nope.yaml: config file not found" in result.output, argv


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("supervisor-bot ")


def test_bot_trace_elsewhere_creates_no_database(tmp_path: Path) -> None:
    done = cli("trace", "console:local", cwd=tmp_path)
    assert done.returncode == 1 and "there is no database at data/bot.db" in done.stderr
    assert not (tmp_path / "data").exists()


def test_bot_in_a_pipe_answers_and_exits_at_the_end_of_input_with_logs_in_a_file(tmp_path: Path) -> None:
    done = cli(stdin="hello\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("bot> ") == 1 and "[offline model]" in done.stdout
    assert "INFO" not in done.stdout + done.stderr  # INFO lines went to the file
    assert "Starting the bot: console" in done.stderr and "Ready in" in done.stderr
    assert "gateway started" in (tmp_path / "data" / "bot.log").read_text()


def test_at_a_terminal_ready_comes_before_the_first_prompt(tmp_path: Path) -> None:
    """The console's first ``you>`` waits for the start-up lines (never ``you> Ready in 0.4 s.``)."""
    import pty
    import select

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT), TERM="dumb")
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"], cwd=tmp_path, env=env, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    seen = b""
    try:

        def read_until(marker: bytes) -> None:
            nonlocal seen
            deadline = time.monotonic() + 60
            while marker not in seen:
                assert time.monotonic() < deadline, seen.decode(errors="replace")
                ready, _w, _x = select.select([master], [], [], 0.05)
                if ready:
                    seen += os.read(master, 65536)

        read_until(b"you> ")
        assert b"you> Ready" not in seen and seen.index(b"Ready in") < seen.index(b"you> "), seen
        os.write(master, b"/whoami\n")
        read_until(b"console-user")
        os.write(master, b"\x04")  # Ctrl-D ends it
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def test_an_unwritable_or_file_data_dir_says_which_path_and_key(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file, not a folder")
    done = cli("run", cwd=tmp_path, env={"BOT_STORE__DATA_DIR": str(tmp_path / "blocked")})
    assert done.returncode == 1
    assert f"the database's folder {tmp_path / 'blocked'} (store.data_dir" in done.stderr and "is a file" in done.stderr


def test_without_asyncpg_postgresql_says_which_extra_to_install(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "sys.modules['asyncpg'] = None  # as on a machine without the postgres extra\n"
        "from bot.store.sql.store import SqlStore\n"
        "try:\n"
        "    asyncio.run(SqlStore('postgresql://u@127.0.0.1:1/db').start())\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "pip install -e '.[postgres]' in the bot's clone" in done.stdout, done.stdout + done.stderr


async def test_a_typo_in_an_agent_or_strategy_gets_a_did_you_mean(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel(["talked to @john"]))
    assert await h.say("@rect list the files") == ["There is no agent @rect. Did you mean @react? (/agents lists them)"]
    assert "Did you mean --strategy=rule?" in (await h.say("@auto --strategy=rul hello"))[0]
    assert await h.say("@john please tell me a joke") == ["talked to @john"]  # not near an agent: plain text


async def test_the_help_shows_every_strategy_option(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), admins=["u1"])
    assert "/strategy [rule|llm|hybrid|reset] [--global]" in (await h.say("/help"))[0]


async def test_an_agent_files_confirmation_question_is_shown(make_harness: Any, tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "fixer.md").write_text(
        "---\nname: fixer\nrunner: react\ntools: {allow: [delete_cache, delete_cahce]}\n"
        "confirmation: {require_confirmation: [delete_cache], prompt_template: 'The {agent} wants {tools}. OK?'}\n"
        "---\nYou fix things.\n"
    )

    @tool(risk="low")
    async def delete_cache(path: str) -> str:
        """Delete a cache."""
        return "deleted"

    model = ScriptedModel([call("delete_cache", {"path": "/tmp/c"}, id="c1"), "done"])
    h = await make_harness(model, tools=[delete_cache], agents={"dirs": [str(agents)]})
    prompt = (await h.say("@fixer clean"))[-1]
    assert prompt.startswith('The fixer wants delete_cache. OK?\n• delete_cache(path="/tmp/c")')
    await h.click("Approve")


def test_an_unknown_tool_in_an_agent_file_is_a_warning_at_load(
    make_settings: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "reader.md").write_text("---\nname: reader\ntools: {allow: [read_fiel]}\n---\nYou read.\n")
    settings = make_settings(agents={"dirs": [str(agents)]})
    with caplog.at_level(logging.WARNING):
        Gateway(settings, model=ScriptedModel([]), channels=[RecordingChannel()])
    assert "agent reader" in caplog.text and "unknown tool 'read_fiel'" in caplog.text
    assert "did you mean 'read_file'" in caplog.text


class Unreachable(RecordingChannel):
    """A platform that cannot be reached for the first two tries."""

    def __init__(self) -> None:
        super().__init__("console")
        self.tries = 0

    async def start(self, inbox: Any) -> None:
        self.tries += 1
        if self.tries <= 2:
            raise ConnectionError("platform unreachable")
        await super().start(inbox)


async def test_an_unreachable_platform_is_retried_and_reported_degraded_meanwhile(make_settings: Any) -> None:
    channel = Unreachable()
    gateway = Gateway(make_settings(), model=ScriptedModel([]), channels=[channel])
    gateway.starter.backoff = Backoff(first_s=0.05, cap_s=0.1)
    await gateway.start()
    try:
        health = gateway.health()
        assert health["status"] == "degraded" and "platform unreachable" in health["channels"]["console"]
        for _ in range(100):
            if gateway.health()["status"] == "ok":
                break
            await asyncio.sleep(0.02)
        assert gateway.health()["status"] == "ok" and channel.tries == 3
    finally:
        await gateway.stop(timeout=5)


async def test_with_no_channel_the_health_says_so(make_settings: Any) -> None:
    gateway = Gateway(make_settings(), model=ScriptedModel([]), channels=[])
    await gateway.start()
    try:
        assert gateway.health()["status"] == "no channels"
    finally:
        await gateway.stop(timeout=5)


class Terminal(RecordingChannel):
    forgets_messages = True


async def test_a_terminal_sees_the_pending_prompt_again_after_a_restart(make_harness: Any) -> None:
    @tool(risk="medium", confirm=True)
    async def delete_cache(path: str) -> str:
        """Delete a cache."""
        return "deleted"

    h = await make_harness(ScriptedModel([call("delete_cache", {"path": "/c"}, id="c1")]), tools=[delete_cache])
    await h.say("@react clean the cache")
    settings = h.gateway.settings
    await h.gateway.stop(timeout=5)
    terminal = Terminal()
    h.channel = terminal
    h.gateway = Gateway(settings, model=ScriptedModel(["cleaned"]), channels=[terminal], tools=[delete_cache])
    await h.gateway.start()
    again = h.prompt()
    assert "delete_cache" in again.text and [b.label for b in again.buttons[0]][:2] == ["✅ Approve", "❌ Deny"]
    after = await h.click("Approve")
    assert after[0].endswith("✅ Approved by u1.") and after[-1] == "cleaned"
    assert h.edits()[-1].edit_of is not None  # the outcome is shown on the prompt shown again
