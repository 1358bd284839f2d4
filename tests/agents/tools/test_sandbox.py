"""``run_command`` in its sandbox: it cannot see the bot's process, environment, database, config or other files."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import pytest

from agents.tools import ToolsConfig, builtin_toolset
from agents.tools.base import Tool
from agents.tools.sandbox import SandboxUnavailable
from tests.conftest import need_bwrap
from tests.waiting import eventually, processes_running

SECRET = "sk-bot-secret-0123456789"


def command(tmp_path: Path, *, hidden: list[Path] | None = None, **kw: object) -> Tool:
    config = ToolsConfig.model_validate({"workspace": str(tmp_path / "ws"), "run_command": {"enabled": True, **kw}})
    return {t.name: t for t in builtin_toolset(config, hidden=hidden or []).tools}["run_command"]


async def test_a_sandboxed_command_cannot_see_the_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need_bwrap()
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)  # the bot's environment holds a secret
    data = tmp_path / "data"
    data.mkdir()
    (data / "bot.db").write_text("the database: " + SECRET)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not for commands")
    t = command(tmp_path, shell=True, hidden=[data])
    script = (
        f"tr '\\0' '\\n' </proc/$PPID/environ; tr '\\0' '\\n' </proc/1/environ; env; "
        f"cat {data / 'bot.db'}; cat {outside}; ls /proc; ps ax 2>&1; "
        f"echo pid={os.getpid()}; ls /proc/{os.getpid()} 2>&1; echo exit-of-probe"
    )
    out = await t.invoke({"command": script})
    assert "exit-of-probe" in out
    assert SECRET not in out and "not for commands" not in out
    assert f"{data / 'bot.db'}: No such file" in out and f"{outside}: No such file" in out
    assert f"cannot access '/proc/{os.getpid()}': No such file" in out  # the bot's process does not exist there
    # Its own files in the workspace work as usual, and it runs as nobody.
    out = await t.invoke({"command": "echo made > here.txt; cat here.txt; id -u"})
    assert out.splitlines()[1:3] == ["made", "65534"]
    assert (tmp_path / "ws" / "here.txt").read_text() == "made\n"


async def test_a_sandboxed_command_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    need_bwrap()
    target = tmp_path / "escape.txt"
    out = await command(tmp_path, shell=True).invoke({"command": f"echo x > {target}; touch /usr/escape; echo $?"})
    assert not target.exists() and not Path("/usr/escape").exists()
    assert out.strip().endswith("1") or "Read-only" in out or "No such file" in out


async def test_a_sandboxed_command_has_no_network_unless_configured(tmp_path: Path) -> None:
    need_bwrap()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (
        'python3 -c "import socket; s=socket.socket(); s.settimeout(2); '
        f"print('connected' if s.connect_ex(('127.0.0.1', {port})) == 0 else 'refused')\""
    )
    try:
        closed = await command(tmp_path).invoke({"command": probe})
        assert closed.splitlines()[-1] == "refused"
        opened = await command(tmp_path, network=True).invoke({"command": probe})
        assert opened.splitlines()[-1] == "connected"
    finally:
        server.close()


async def test_background_children_die_with_the_command_and_its_output_is_kept(tmp_path: Path) -> None:
    need_bwrap()
    t = command(tmp_path, timeout_s=30, shell=True)
    # The child sleeps far longer than this test waits: if it is gone, it was killed with the command.
    out = await t.invoke({"command": "echo before; (sleep 611.25; touch late.txt) & echo after"})
    assert out.splitlines() == ["exit code 0", "before", "after"]
    await eventually(lambda: not processes_running("sleep 611.25"), what="the background child to be gone")
    assert not (tmp_path / "ws" / "late.txt").exists()


async def test_without_a_sandbox_a_background_child_holding_the_pipe_loses_no_output(tmp_path: Path) -> None:
    t = command(tmp_path, timeout_s=10, shell=True, sandbox="none")
    for _ in range(5):
        out = await t.invoke({"command": "echo one; echo two; sleep 30 &"})
        assert out.splitlines() == ["exit code 0", "one", "two"]


def test_without_bubblewrap_auto_leaves_run_command_off_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    with caplog.at_level(logging.WARNING):
        config = ToolsConfig.model_validate({"workspace": str(tmp_path), "run_command": {"enabled": True}})
        names = {t.name for t in builtin_toolset(config).tools}
    assert "run_command" not in names
    assert "stays OFF" in caplog.text and "bubblewrap is not installed" in caplog.text
    assert "sandbox: none" in caplog.text
    strict = ToolsConfig.model_validate(
        {"workspace": str(tmp_path), "run_command": {"enabled": True, "sandbox": "bwrap"}}
    )
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        builtin_toolset(strict)


def test_sandbox_none_runs_unconfined_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        command(tmp_path, sandbox="none")
    assert "WITHOUT a sandbox" in caplog.text
