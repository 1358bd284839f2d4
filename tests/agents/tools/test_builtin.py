"""The built-in toolset: its composition and config, get_current_time, run_command."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.tools import ToolError, ToolsConfig, builtin_toolset
from agents.tools.base import Tool
from agents.tools.time import time_tools
from tests.conftest import need_bwrap
from tests.waiting import eventually, processes_running

pytestmark = pytest.mark.timeout(30)


def tools(tmp_path: Path, **kw: object) -> dict[str, Tool]:
    config = ToolsConfig.model_validate({"workspace": str(tmp_path / "ws"), **kw})
    return {t.name: t for t in builtin_toolset(config).tools}


# -- the toolset and its config --------------------------------------------------------------


def test_default_toolset(tmp_path: Path) -> None:
    toolset = builtin_toolset(ToolsConfig(workspace=tmp_path / "ws"))
    assert toolset.name == "builtin"
    by_name = {t.name: t for t in toolset.tools}
    assert set(by_name) == {"get_current_time", "http_get", "read_file", "write_file", "list_dir"}
    assert {t.toolset for t in toolset.tools} == {"builtin"}
    assert by_name["get_current_time"].risk == "safe"
    assert by_name["http_get"].risk == "low"
    assert by_name["write_file"].risk == "medium"
    assert not any(t.needs_approval for t in toolset.tools)
    assert not (tmp_path / "ws").exists()  # created on demand, not when the toolset is built


def test_tool_schemas(tmp_path: Path) -> None:
    t = tools(tmp_path)
    assert t["http_get"].parameters["required"] == ["url"]
    assert t["http_get"].parameters["additionalProperties"] is False
    assert t["write_file"].parameters["properties"].keys() == {"path", "content"}
    assert "required" not in t["list_dir"].parameters  # path defaults to "."
    assert all(tool.description for tool in t.values())


async def test_bad_arguments_become_tool_errors(tmp_path: Path) -> None:
    t = tools(tmp_path)
    with pytest.raises(ToolError, match="invalid arguments for http_get"):
        await t["http_get"].invoke({})
    with pytest.raises(ToolError, match="invalid arguments for read_file"):
        await t["read_file"].invoke({"path": 3})


def test_disabled_tools(tmp_path: Path) -> None:
    assert set(tools(tmp_path, disabled=["http_get", "write_file"])) == {"get_current_time", "read_file", "list_dir"}
    enabled = tools(tmp_path, run_command={"enabled": True}, disabled=["run_command"])
    assert "run_command" not in enabled


def test_config_defaults_and_strictness() -> None:
    config = ToolsConfig()
    assert config.workspace == Path("data/workspace")
    assert (config.http.timeout_s, config.http.max_bytes, config.http.max_redirects) == (10, 1_000_000, 5)
    assert config.http.allow_private == []
    assert config.run_command.enabled is False and config.run_command.shell is False
    assert (config.run_command.timeout_s, config.run_command.max_output_chars) == (30, 20_000)
    assert config.disabled == []
    with pytest.raises(ValidationError):
        ToolsConfig.model_validate({"http": {"timeout": 3}})
    with pytest.raises(ValidationError):
        ToolsConfig.model_validate({"run_command": {"enabled": True, "sudo": True}})
    with pytest.raises(ValidationError, match="not a network"):
        ToolsConfig.model_validate({"http": {"allow_private": ["10.0.0.0/33"]}})
    assert ToolsConfig.model_validate({"http": {"allow_private": ["wiki.lan", "10.0.0.0/8"]}}).http.allow_private


# -- get_current_time ------------------------------------------------------------------------

FIXED = datetime(2026, 1, 15, 12, 30, 0, tzinfo=UTC)


def clock_tool() -> Tool:
    return time_tools(clock=lambda: FIXED)[0]


async def test_current_time_in_a_zone() -> None:
    t = clock_tool()
    out = await t.invoke({"timezone": "Asia/Shanghai"})
    assert out.startswith("2026-01-15T20:30:00+08:00") and "Thursday" in out and "Asia/Shanghai" in out
    paris = await t.invoke({"timezone": "europe/paris"})  # any letter case
    assert paris.startswith("2026-01-15T13:30:00+01:00") and "Europe/Paris (CET, UTC+01:00)" in paris
    assert (await t.invoke({})).startswith("2026-01-15T12:30:00+00:00")
    assert (await t.invoke({"timezone": "UTC+05:30"})).startswith("2026-01-15T18:00:00+05:30")
    assert (await t.invoke({"timezone": "-8"})).startswith("2026-01-15T04:30:00-08:00")


async def test_current_time_really_is_now() -> None:
    t = tools(Path("unused"))["get_current_time"]
    out = await t.invoke({"timezone": "UTC"})
    shown = datetime.fromisoformat(out.split(",")[0])
    assert abs((shown - datetime.now(UTC)).total_seconds()) < 5


@pytest.mark.parametrize("zone", ["Mars/Base", "Europe", "../../etc/passwd", "/etc/localtime", "", "x" * 300, "+15"])
async def test_unknown_time_zone(zone: str) -> None:
    with pytest.raises(ToolError) as caught:
        await clock_tool().invoke({"timezone": zone})
    message = str(caught.value)
    assert "Traceback" not in message and "site-packages" not in message
    assert "IANA name" in message or "out of range" in message


async def test_unknown_time_zone_suggests_close_names() -> None:
    with pytest.raises(ToolError, match="Did you mean 'Europe/Paris'"):
        await clock_tool().invoke({"timezone": "Europ/Paris"})


# -- run_command -----------------------------------------------------------------------------


def command(tmp_path: Path, **kw: object) -> Tool:
    need_bwrap()  # run_command runs in its sandbox
    return tools(tmp_path, run_command={"enabled": True, **kw})["run_command"]


def test_run_command_absent_unless_enabled(tmp_path: Path) -> None:
    assert "run_command" not in tools(tmp_path)
    assert "run_command" not in tools(tmp_path, run_command={"enabled": False, "shell": True})


def test_run_command_is_high_risk_and_always_confirmed(tmp_path: Path) -> None:
    t = command(tmp_path)
    assert t.risk == "high" and t.needs_approval is True and t.toolset == "builtin"
    assert t.parameters["required"] == ["command"]


async def test_run_command_output_and_exit_code(tmp_path: Path) -> None:
    t = command(tmp_path)
    out = await t.invoke({"command": "sh -c 'echo hello; echo oops >&2; exit 3'"})
    assert out.splitlines()[0] == "exit code 3"
    assert "hello" in out and "oops" in out
    assert (await t.invoke({"command": "true"})).startswith("exit code 0")


async def test_run_command_runs_in_the_workspace(tmp_path: Path) -> None:
    t = command(tmp_path)
    out = await t.invoke({"command": "pwd"})
    assert out.splitlines()[1] == str((tmp_path / "ws").resolve())
    await t.invoke({"command": "touch made-here.txt"})
    assert (tmp_path / "ws" / "made-here.txt").exists()


async def test_run_command_without_a_shell(tmp_path: Path) -> None:
    t = command(tmp_path)
    out = await t.invoke({"command": "echo $HOME 'a  b' | wc"})
    assert out.splitlines()[1] == "$HOME a  b | wc"  # no expansion, no pipe: echo got them as arguments
    with pytest.raises(ToolError, match="cannot parse"):
        await t.invoke({"command": "echo 'unclosed"})
    with pytest.raises(ToolError, match="command not found: no-such-command-xyz"):
        await t.invoke({"command": "no-such-command-xyz --help"})
    with pytest.raises(ToolError, match="empty command"):
        await t.invoke({"command": "   "})


async def test_run_command_with_a_shell(tmp_path: Path) -> None:
    t = command(tmp_path, shell=True)
    out = await t.invoke({"command": "printf 'a\\nb\\nc\\n' | wc -l"})
    assert out.splitlines()[0] == "exit code 0" and out.splitlines()[1].strip() == "3"


async def test_run_command_output_is_truncated(tmp_path: Path) -> None:
    t = command(tmp_path, max_output_chars=100)
    out = await t.invoke({"command": "sh -c 'yes | head -c 1000000'"})
    assert out.startswith("exit code 0")
    assert "[output truncated at 100 characters]" in out
    assert len(out) < 200


async def test_run_command_timeout_kills_the_process_group(tmp_path: Path) -> None:
    t = command(tmp_path, timeout_s=0.5)
    with pytest.raises(ToolError, match=r"timed out after 0\.5 s; the command was killed") as caught:
        # The background child is in the command's process group: it must die too.
        await t.invoke({"command": "sh -c 'echo started; (sleep 612.5; touch late.txt) & sleep 613.5'"})
    assert "started" in str(caught.value)  # the output so far
    await eventually(lambda: not processes_running("sleep 61"), what="the command and its child to be gone")
    assert not (tmp_path / "ws" / "late.txt").exists()


async def test_run_command_stdin_is_closed(tmp_path: Path) -> None:
    out = await command(tmp_path, timeout_s=5).invoke({"command": "cat"})
    assert out.startswith("exit code 0")


async def test_run_command_does_not_see_the_gateways_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "secret-token-123")
    monkeypatch.setenv("PROJECT_FLAG", "visible")
    out = await command(tmp_path, pass_env=["PROJECT_FLAG"]).invoke({"command": "env"})
    assert "secret-token-123" not in out
    assert "PROJECT_FLAG=visible" in out and "PATH=" in out


async def test_run_command_background_child_holding_output_does_not_stall(tmp_path: Path) -> None:
    t = command(tmp_path, timeout_s=600, shell=True)
    out = await t.invoke({"command": "echo done; sleep 614.5 &"})  # waiting for the pipe would take 10 minutes
    assert out.startswith("exit code 0") and "done" in out
