"""MCP servers in the running gateway: per-agent tools, confirmation, faults told once, no orphans."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, call
from bot.cli.mcp import mcp_app
from tests.conftest import Harness
from tests.helpers.mcp import STDIO_FAKE, alive, gone, pids_in

FAKES = Path(__file__).parents[1] / "fakes"
TIME_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def fake(*args: str, **kw: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [STDIO_FAKE, *args], **kw}


def agent_files(root: Path, **agents: str) -> dict[str, list[str]]:
    """Agent files (name → front matter lines) in ``root/agents``; returns the ``agents`` settings override."""
    folder = root / "agents"
    folder.mkdir(exist_ok=True)
    for name, front in agents.items():
        text = f"---\nname: {name}\nrunner: react\n{front}\n---\nYou are {name}.\n"
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return {"dirs": [str(folder)]}


def last_result(req: ModelRequest) -> Any:
    return req.messages[-1].tool_results[0]


def notices(h: Harness) -> list[str]:
    return [m.text for m in h.channel.sent if m.kind == "notice"]


async def test_only_agents_that_list_the_server_see_its_tools(make_harness: Any, tmp_path: Path) -> None:
    agents = agent_files(
        tmp_path,
        timebot="mcp: {servers: [time]}\ntools: {allow: ['mcp.time.*']}",
        plain="tools: {allow: ['*']}",
        nodeny="mcp: {servers: [time]}\ntools: {deny: [mcp.time.convert_time, read_file]}",
    )
    seen: dict[str, list[str]] = {}

    def ask_time(req: ModelRequest) -> Any:
        seen["timebot"] = sorted(t.name for t in req.tools)
        return call("mcp.time.get_current_time", {"timezone": "UTC"}, id="t1")

    def plain(req: ModelRequest) -> str:
        seen["plain"] = sorted(t.name for t in req.tools)
        return "no tools of yours"

    model = ScriptedModel([ask_time, lambda req: f"Time zone: {last_result(req).content['timezone']}.", plain])
    h = await make_harness(model, agents=agents, mcp={"servers": {"time": TIME_SERVER}})
    assert await h.say("@timebot what time is it?") == ["Time zone: UTC."]
    assert seen["timebot"] == ["mcp.time.convert_time", "mcp.time.get_current_time"]
    assert await h.say("@plain hello") == ["no tools of yours"]
    assert seen["plain"] and not [n for n in seen["plain"] if n.startswith("mcp.")]
    nodeny = h.gateway.catalog.get("nodeny")
    assert nodeny is not None
    offered = {t.name for t in nodeny.tools(await h.gateway.tool_pool.tools(nodeny))}
    assert "mcp.time.get_current_time" in offered and "list_dir" in offered
    assert not offered & {"mcp.time.convert_time", "read_file"}, "deny wins"
    model.assert_complete()


async def test_server_confirmation_list_asks_first_and_runs_once(make_harness: Any, tmp_path: Path) -> None:
    count_file = tmp_path / "count"
    server = fake("--count-file", str(count_file), require_confirmation=["count"])
    model = ScriptedModel([call("mcp.fake.count", {"note": "once"}, id="c1"), "Counted."])
    h = await make_harness(
        model, agents=agent_files(tmp_path, counter="mcp: {servers: [fake]}"), mcp={"servers": {"fake": server}}
    )
    [prompt] = await h.say("@counter count this once")
    assert 'mcp.fake.count(note="once")' in prompt and not count_file.exists()
    assert (await h.click("Approve"))[-1] == "Counted."
    assert count_file.read_text().splitlines() == ["once"]
    model.assert_complete()


async def test_server_that_cannot_start_is_told_once(make_harness: Any, tmp_path: Path) -> None:
    model = ScriptedModel(["First answer.", "Second answer."])
    h = await make_harness(
        model,
        agents=agent_files(tmp_path, broken="mcp: {servers: [broken]}"),
        mcp={"servers": {"broken": {"command": "false"}}},
    )
    first = await h.say("@broken hello")
    assert first[-1] == "First answer."
    assert await h.say("@broken again") == ["Second answer."]
    [notice] = notices(h)
    assert "'broken' is unavailable (could not start)" in notice
    agent = h.gateway.catalog.get("broken")
    assert agent is not None
    for _ in range(2):  # a pool that is told the chat tells it directly, also once
        await h.gateway.tool_pool.tools(agent, h.chat("c2"))
    assert [m.chat.chat_id for m in h.channel.sent if m.kind == "notice"] == ["c1", "c2"]
    model.assert_complete()


async def test_server_failing_mid_call_is_told_once_and_the_bot_keeps_serving(
    make_harness: Any, tmp_path: Path
) -> None:
    """A hanging call (past ``timeout_s``, the server no longer answers) and a crash mid-call."""
    model = ScriptedModel(
        [
            call("mcp.fake.hang", {}, id="h1"),
            lambda req: f"hang: {last_result(req).content} ({last_result(req).is_error})",
            call("mcp.fake.crash", {}, id="c1"),
            lambda req: f"crash: {last_result(req).content}",
            call("mcp.fake.echo", {"text": "still here"}, id="e1"),
            lambda req: f"echo: {last_result(req).content}",
        ]
    )
    h = await make_harness(
        model,
        agents=agent_files(tmp_path, tooler="mcp: {servers: [fake]}"),
        mcp={"servers": {"fake": fake(timeout_s=1)}},
    )
    hang = await h.say("@tooler hang")
    assert "is unavailable (stopped answering)" in hang[-1] and hang[-1].endswith("(True)")
    crash = await h.say("@tooler crash")
    assert crash[-1].startswith("crash: the MCP server 'fake' is unavailable (exited")
    assert await h.say("@tooler echo") == ["echo: still here"]
    assert [n.split(" (")[1].split(")")[0] for n in notices(h)] == [
        "stopped answering",
        "exited or closed the connection",
    ]
    model.assert_complete()


async def test_gateway_stop_leaves_no_server_processes(make_harness: Any, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    model = ScriptedModel([call("mcp.fake.echo", {"text": "x"}, id="e1"), "done"])
    h = await make_harness(
        model,
        agents=agent_files(tmp_path, tooler="mcp: {servers: [fake]}"),
        mcp={"servers": {"fake": fake("--ignore-eof", "--spawn-child", "--pid-file", str(pid_file))}},
    )
    assert await h.say("@tooler go") == ["done"]
    pids = pids_in(pid_file)
    assert len(pids) == 2 and all(alive(p) for p in pids)
    await h.restart(ScriptedModel())  # stops this gateway (the new one is stopped by the fixture)
    assert await gone(pids)


def test_killed_gateway_leaves_no_server_processes(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    env = {**os.environ, "DATA_DIR": str(tmp_path / "data"), "PID_FILE": str(pid_file)}
    proc = subprocess.Popen(
        [sys.executable, str(FAKES / "mcp_gateway.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(tmp_path),
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert json.loads(line or "{}").get("ready"), proc.stderr.read() if proc.stderr else line
        pids = pids_in(pid_file)
        assert len(pids) == 2 and all(alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        assert asyncio.run(gone(pids))
    finally:
        proc.kill()
        proc.wait(5)


def test_bot_mcp_list(tmp_path: Path) -> None:
    config = tmp_path / "bot.yaml"
    servers = {
        "fake": fake(require_confirmation=["count"], tools={"crash": "high"}),
        "broken": {"command": "false"},
        "off": {"url": "http://127.0.0.1:9/mcp", "enabled": False},
    }
    config.write_text(json.dumps({"mcp": {"servers": servers}}), encoding="utf-8")
    result = CliRunner().invoke(mcp_app, ["list", "--config", str(config)])
    assert result.exit_code == 1, result.output
    out = result.output
    assert "fake  [stdio] up (protocol 2025-11-25)" in out
    assert "- mcp.fake.count (risk medium, confirmed)" in out and "- mcp.fake.crash (risk high)" in out
    assert "broken  [stdio] down" in out and "unavailable: could not start" in out
    assert "off  [http] disabled" in out
    as_json = CliRunner().invoke(mcp_app, ["list", "--config", str(config), "--json", "--no-connect"])
    assert as_json.exit_code == 0, as_json.output
    assert [s["state"] for s in json.loads(as_json.output)] == ["idle", "idle", "disabled"]


def test_agents_validate_checks_mcp_tools_by_their_server(tmp_path: Path, monkeypatch: Any) -> None:
    from bot.cli.agents import agents_app

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "config" / "agents"
    folder.mkdir(parents=True)
    servers = {"fake": fake(), "spare": {"command": "false", "enabled": False}}
    (tmp_path / "config" / "bot.yaml").write_text(
        json.dumps({"agents": {"dirs": ["config/agents"]}, "mcp": {"servers": servers}}), encoding="utf-8"
    )
    (folder / "a.md").write_text(
        "---\nname: a\nmcp: {servers: [fake, spare]}\ntools: {allow: [mcp.fake.echo, mcp.fake.ecko]}\n---\nx\n",
        encoding="utf-8",
    )
    (folder / "b.md").write_text("---\nname: b\ntools: {allow: ['mcp.fake.*']}\n---\nx\n", encoding="utf-8")
    static = CliRunner().invoke(agents_app, ["validate"])
    assert static.exit_code == 1
    assert "config/agents/a.md: mcp.servers[1]: MCP server 'spare' is disabled" in static.output
    assert "b.md: tools.allow[0]: 'mcp.fake.*' is a tool of MCP server 'fake', which mcp.servers does not list" in (
        static.output
    )
    assert "ecko" not in static.output
    connected = CliRunner().invoke(agents_app, ["validate", "--mcp"])
    assert "a.md: tools.allow[1]: MCP server 'fake' has no tool 'ecko' (did you mean 'echo'?)" in connected.output
    assert "tools.allow[0]" not in connected.output.split("b.md")[0]
