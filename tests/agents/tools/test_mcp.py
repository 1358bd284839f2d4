"""MCP servers as toolsets, against real servers: ``mcp-server-time`` over stdio, an SDK server over
streamable HTTP on 127.0.0.1, and a small stdio fake that crashes, hangs or refuses to start."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from agents.approval import approval_required
from agents.context import RunContext
from agents.messages import Message
from agents.models.gemini_schema import gemini_tool_name
from agents.models.scripted import ScriptedModel, call
from agents.react import ReactRunner
from agents.results import FinalAnswer
from agents.tools.base import Tool, ToolContext, ToolError
from agents.tools.mcp import McpConfig, McpServerConfig
from agents.tools.mcp.config import McpConfigError, server_headers
from agents.tools.mcp.faults import Outage
from agents.tools.mcp.manager import McpManager
from agents.tools.mcp.results import convert_result
from agents.tools.mcp.transport import LAUNCHER
from bot.clock import SYSTEM_CLOCK, FakeClock
from tests.fakes.gemini_server import FakeGemini, call_body, function_call_part, text_body
from tests.fakes.mcp_http_server import LONG_TOOL
from tests.helpers.mcp import FAKES, STDIO_FAKE, alive, gone, pids_in
from tests.waiting import eventually

TIME_SERVER = McpServerConfig(command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"])


def fake(*args: str, **kw: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[STDIO_FAKE, *args], **kw)


class Faults:
    """The on_fault hook: records what the manager reports."""

    def __init__(self) -> None:
        self.seen: list[tuple[Outage, str]] = []

    async def __call__(self, outage: Outage, chat_key: str) -> None:
        self.seen.append((outage, chat_key))


@pytest.fixture
async def manager() -> AsyncIterator[Callable[..., McpManager]]:
    made: list[McpManager] = []

    def make(faults: Faults | None = None, clock: FakeClock | None = None, **servers: McpServerConfig) -> McpManager:
        made.append(McpManager(servers, on_fault=faults, clock=clock or SYSTEM_CLOCK))
        return made[-1]

    yield make
    for m in made:
        await m.aclose()


def start_http_server(port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """The SDK's own server over streamable HTTP in a subprocess on 127.0.0.1; returns it and its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(FAKES / "mcp_http_server.py"), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise RuntimeError("the MCP HTTP test server did not start")
    return proc, f"http://127.0.0.1:{json.loads(line)['port']}/mcp"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    proc, url = start_http_server()
    try:
        yield url
    finally:
        proc.kill()
        proc.wait(5)


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


CTX = ToolContext(chat_key="console:c1")


# -- stdio: mcp-server-time -------------------------------------------------------------------


async def test_time_server_lists_calls_and_serves_a_react_run(manager: Callable[..., McpManager]) -> None:
    m = manager(time=TIME_SERVER.model_copy(update={"risk": "low", "tools": {"convert_*": "safe"}}))
    found = await m.tools_for(["time"])
    assert found.outages == []
    tools = by_name(found.tools)
    assert set(tools) == {"mcp.time.get_current_time", "mcp.time.convert_time"}
    assert {t.toolset for t in found.tools} == {"mcp.time"}
    assert (tools["mcp.time.get_current_time"].risk, tools["mcp.time.convert_time"].risk) == ("low", "safe")
    assert "timezone" in tools["mcp.time.get_current_time"].parameters["properties"]

    now = await tools["mcp.time.get_current_time"].invoke({"timezone": "UTC"}, CTX)
    assert now["timezone"] == "UTC" and now["datetime"].endswith("+00:00")

    model = ScriptedModel(
        [call("mcp.time.get_current_time", {"timezone": "UTC"}, id="t1"), lambda req: f"It is {req.messages[-1]}"]
    )
    ctx = RunContext(chat_key="console:c1", model=model, toolset=approval_required((await m.tools_for(["time"])).tools))
    result = await ReactRunner("timer").run(ctx, Message.user("what time is it?"))
    assert isinstance(result, FinalAnswer)
    [tool_turn] = [msg for msg in result.messages if msg.role == "tool"]
    [answer] = tool_turn.tool_results
    assert not answer.is_error and answer.content["timezone"] == "UTC"
    model.assert_complete()
    [status] = m.status()
    assert status.state == "up" and status.protocol and len(status.tools) == 2


async def test_connection_is_reused_and_stopped(manager: Callable[..., McpManager], tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    m = manager(fake=fake("--pid-file", str(pid_file)))
    first = by_name((await m.tools_for(["fake"])).tools)
    assert await first["mcp.fake.echo"].invoke({"text": "one"}, CTX) == "one"
    second = by_name((await m.tools_for(["fake", "fake"])).tools)
    assert await second["mcp.fake.echo"].invoke({"text": "two"}, CTX) == "two"
    [pid] = pids_in(pid_file)
    assert alive(pid)
    await m.aclose()
    assert await gone([pid])
    assert m.status()[0].state == "stopped"


# -- streamable HTTP: the SDK's own server ------------------------------------------------------


async def test_http_results_structured_mixed_and_errors(manager: Callable[..., McpManager], http_url: str) -> None:
    m = manager(web=McpServerConfig(url=http_url))
    tools = by_name((await m.tools_for(["web"])).tools)
    assert f"mcp.web.{LONG_TOOL}" in tools and "mcp.web.echo" in tools
    assert await tools["mcp.web.echo"].invoke({"text": "hi"}, CTX) == {"result": "hi"}
    picture = await tools["mcp.web.picture"].invoke({}, CTX)
    assert "a chart" in picture
    assert "[image: image/png, 5 bytes]" in picture
    assert "[resource <file:///notes.txt>, text/plain]\nnote text" in picture
    assert "[resource link: big.csv <file:///big.csv>]" in picture
    with pytest.raises(ToolError, match="fail"):
        await tools["mcp.web.fail"].invoke({}, CTX)
    with pytest.raises(ToolError, match="invalid arguments"):
        await tools["mcp.web.echo"].invoke({"text": 3}, CTX)


async def test_long_slashed_name_round_trips_through_gemini(
    manager: Callable[..., McpManager], http_url: str, gemini_server: FakeGemini
) -> None:
    from agents.models.gemini import GeminiModel

    m = manager(web=McpServerConfig(url=http_url))
    tools = [t for t in (await m.tools_for(["web"])).tools if t.name in (f"mcp.web.{LONG_TOOL}", "mcp.web.echo")]
    ours = f"mcp.web.{LONG_TOOL}"
    theirs = gemini_tool_name(ours)
    assert len(ours) > 128 and len(theirs) <= 64 and "/" not in theirs and theirs != ours
    gemini_server.reply(call_body(function_call_part(theirs, {"path": "/etc/motd"}, id="g1")))
    gemini_server.reply(text_body("Read it."))
    model = GeminiModel("gemini-test", "test-key", base_url=gemini_server.base_url, timeout_s=5, max_retries=0)
    try:
        result = await ReactRunner("reader").run(
            RunContext(chat_key="console:c1", model=model, toolset=approval_required(tools)),
            Message.user("read /etc/motd"),
        )
    finally:
        await model.aclose()
    assert isinstance(result, FinalAnswer) and result.text == "Read it."
    declared = [d["name"] for t in gemini_server.requests[0].body["tools"] for d in t["functionDeclarations"]]
    assert sorted(declared) == sorted(["mcp.web.echo", theirs])
    [tool_turn] = [msg for msg in result.messages if msg.role == "tool"]
    assert tool_turn.tool_results[0].name == ours
    assert tool_turn.tool_results[0].content == {"result": "contents of /etc/motd"}
    second = gemini_server.requests[1].body["contents"]
    assert second[1]["parts"][0]["functionCall"]["name"] == theirs
    assert second[2]["parts"][0]["functionResponse"]["name"] == theirs


async def test_headers_come_from_the_environment_and_stay_out_of_logs(
    manager: Callable[..., McpManager],
    http_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCP_TEST_TOKEN", "s3cret-value")
    m = manager(
        web=McpServerConfig(url=http_url, headers={"Authorization": "Bearer ${MCP_TEST_TOKEN}"}),
        nokey=McpServerConfig(url=http_url, headers={"Authorization": "Bearer ${MCP_UNSET_TOKEN}"}),
    )
    found = await m.tools_for(["web", "nokey"])
    assert await by_name(found.tools)["mcp.web.whoami"].invoke({}, CTX) == {"result": "Bearer s3cret-value"}
    [outage] = found.outages
    assert (outage.server, outage.reason) == ("nokey", "is misconfigured")
    assert "mcp.servers.nokey.headers.Authorization: ${MCP_UNSET_TOKEN} is not set" in (m.status()[1].detail or "")
    assert "s3cret-value" not in caplog.text


async def test_tools_list_changed_refreshes_the_tools(manager: Callable[..., McpManager], http_url: str) -> None:
    """2026-era servers announce changes on a ``subscriptions/listen`` stream; handshake-era ones by notification."""
    m = manager(web=McpServerConfig(url=http_url), old=McpServerConfig(url=http_url, protocol="legacy"))
    for server, added in (("web", "added_modern"), ("old", "added_legacy")):
        tools = by_name((await m.tools_for([server])).tools)
        assert f"mcp.{server}.{added}" not in tools
        assert await tools[f"mcp.{server}.add_tool"].invoke({"name": added}, CTX) == {"result": f"added {added}"}
        assert await _eventually_listed(m, server, f"mcp.{server}.{added}")
        doubled = await by_name((await m.tools_for([server])).tools)[f"mcp.{server}.{added}"].invoke({"n": 4}, CTX)
        assert doubled == {"result": 8}
    protocols = {s.name: s.protocol for s in m.status()}
    assert protocols["old"] != protocols["web"]


async def test_stdio_list_changed_notification(manager: Callable[..., McpManager]) -> None:
    m = manager(fake=fake())
    tools = by_name((await m.tools_for(["fake"])).tools)
    assert "mcp.fake.extra" not in tools
    await tools["mcp.fake.add_tool"].invoke({}, CTX)
    assert await _eventually_listed(m, "fake", "mcp.fake.extra")


async def _eventually_listed(m: McpManager, server: str, name: str) -> bool:
    async def listed() -> bool:
        return name in {t.name for t in (await m.tools_for([server])).tools}

    return await eventually(listed, every=0.02, what=f"{name} to be listed")


# -- faults -------------------------------------------------------------------------------------


def test_http_server_going_away_and_coming_back() -> None:
    """Sync test: the server subprocess is started and stopped with blocking calls between async steps."""
    proc, url = start_http_server()
    port = int(url.split(":")[2].split("/")[0])
    clock = FakeClock()
    m = McpManager({"web": McpServerConfig(url=url, timeout_s=5)}, clock=clock)
    runner = asyncio.Runner()
    try:
        tools = by_name(runner.run(m.tools_for(["web"])).tools)
        assert runner.run(tools["mcp.web.echo"].invoke({"text": "up"}, CTX)) == {"result": "up"}
        proc.kill()
        proc.wait(5)
        with pytest.raises(ToolError, match="'web' is unavailable"):
            runner.run(tools["mcp.web.echo"].invoke({"text": "down?"}, CTX))
        [outage] = runner.run(m.tools_for(["web"])).outages
        assert outage.reason == "refused the connection"
        proc, _ = start_http_server(port)
        runner.run(clock.advance(m.status()[0].retry_in_s or 0))
        again = runner.run(m.tools_for(["web"]))
        assert again.outages == []
        assert runner.run(by_name(again.tools)["mcp.web.echo"].invoke({"text": "back"}, CTX)) == {"result": "back"}
    finally:
        runner.run(m.aclose())
        runner.close()
        proc.kill()
        proc.wait(5)


async def test_slow_tool_times_out_and_the_server_stays(manager: Callable[..., McpManager], http_url: str) -> None:
    m = manager(web=McpServerConfig(url=http_url, timeout_s=1))
    tools = by_name((await m.tools_for(["web"])).tools)
    with pytest.raises(ToolError, match="did not answer within 1s"):  # only the time limit says this
        await tools["mcp.web.slow"].invoke({"seconds": 600}, CTX)
    assert await tools["mcp.web.echo"].invoke({"text": "still here"}, CTX) == {"result": "still here"}


async def test_hung_server_fails_the_run_then_restarts(manager: Callable[..., McpManager], tmp_path: Path) -> None:
    pid_file, faults = tmp_path / "pids", Faults()
    m = manager(faults, fake=fake("--pid-file", str(pid_file), timeout_s=1))
    tools = by_name((await m.tools_for(["fake"])).tools)
    with pytest.raises(ToolError, match="unavailable \\(stopped answering\\)"):  # the time limit, then the probe
        await tools["mcp.fake.hang"].invoke({}, CTX)
    with pytest.raises(ToolError, match="failed earlier in this run"):
        await tools["mcp.fake.echo"].invoke({"text": "x"}, CTX)
    assert [(o.server, o.reason, chat) for o, chat in faults.seen] == [("fake", "stopped answering", "console:c1")]

    again = await m.tools_for(["fake"])
    assert again.outages == [] and await by_name(again.tools)["mcp.fake.echo"].invoke({"text": "x"}, CTX) == "x"
    first, second = pids_in(pid_file)
    assert await gone([first]) and alive(second)


async def test_crash_mid_call_then_reconnect(manager: Callable[..., McpManager], tmp_path: Path) -> None:
    pid_file, faults = tmp_path / "pids", Faults()
    m = manager(faults, fake=fake("--pid-file", str(pid_file)))
    tools = by_name((await m.tools_for(["fake"])).tools)
    with pytest.raises(ToolError, match="unavailable \\(exited"):
        await tools["mcp.fake.crash"].invoke({}, CTX)
    [(outage, _)] = faults.seen
    again = await m.tools_for(["fake"])
    assert again.outages == [] and m.status()[0].state == "up"
    assert await by_name(again.tools)["mcp.fake.echo"].invoke({"text": "back"}, CTX) == "back"
    assert len(pids_in(pid_file)) == 2 and outage.id == 1


@pytest.mark.parametrize("config", [McpServerConfig(command="false"), fake("--exit-at-start", "3")])
async def test_server_that_cannot_start_backs_off(
    manager: Callable[..., McpManager], config: McpServerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agents.tools.mcp.connection.BACKOFF_FIRST_S", 2.0)
    clock = FakeClock()
    m = manager(bad=config, good=fake(), clock=clock)
    [outage] = (await m.tools_for(["bad"])).outages
    assert (outage.server, outage.reason, outage.since) == ("bad", "could not start", clock.time()), "on the clock"
    assert m.status()[0].retry_in_s == 2.0, "the first back-off"
    found = await m.tools_for(["bad"])  # backing off: answered at once, nothing started
    assert found.outages == [outage]
    if config.args:
        assert "refusing to start" in (m.status()[0].detail or "")
    assert m.status()[0].retry_in_s == 2.0, "no new attempt (it would have doubled the back-off)"
    await clock.advance(1.9)
    assert (await m.tools_for(["bad"])).outages == [outage] and m.status()[0].retry_in_s == pytest.approx(0.1)
    await clock.advance(0.1)
    later = await m.tools_for(["bad", "good"])
    assert {t.toolset for t in later.tools} == {"mcp.good"}
    assert [o.id for o in later.outages] == [outage.id], "the same outage, not a new one"
    assert (m.status()[0].retry_in_s or 0) > 2, "the next attempt waits longer"


async def test_server_that_hangs_at_start(manager: Callable[..., McpManager], tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    m = manager(stuck=fake("--hang-at-start", "--pid-file", str(pid_file), timeout_s=1))
    [outage] = (await m.tools_for(["stuck"])).outages
    assert outage.reason == "did not answer within 1s"
    assert await gone(pids_in(pid_file))


async def test_stop_takes_down_a_server_that_ignores_eof_and_sigterm(
    manager: Callable[..., McpManager], tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    m = manager(stubborn=fake("--ignore-eof", "--spawn-child", "--pid-file", str(pid_file)))
    assert (await m.tools_for(["stubborn"])).outages == []
    pids = pids_in(pid_file)
    assert len(pids) == 2 and all(alive(p) for p in pids)
    await m.aclose()
    assert await gone(pids)


@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "worker-thread"])
def test_launcher_takes_the_server_down_when_its_parent_dies(tmp_path: Path, from_thread: bool) -> None:
    """What protects against a SIGKILLed gateway: the launcher watches its parent process.

    Started from a worker thread that then ends, the server must live on until the process dies.
    """
    pid_file = tmp_path / "pids"
    spawn = (
        "import os, subprocess, sys, threading, time\n"
        "def spawn():\n"
        "    subprocess.Popen([sys.executable, '-I', '-S', sys.argv[1], str(os.getpid()), '--', *sys.argv[2:]],"
        " start_new_session=True, stdin=subprocess.PIPE)\n"
        f"{'t = threading.Thread(target=spawn); t.start(); t.join()' if from_thread else 'spawn()'}\n"
        "time.sleep(60)\n"
    )
    server = [sys.executable, STDIO_FAKE, "--ignore-eof", "--spawn-child", "--pid-file", str(pid_file)]
    parent = subprocess.Popen([sys.executable, "-c", spawn, str(LAUNCHER), *server])
    try:
        deadline = time.monotonic() + 10
        while len(pids_in(pid_file)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = pids_in(pid_file)
        assert len(pids) == 2
        if from_thread:  # the thread that started it has ended: the server must stay (watched for 1.5 s)
            for _ in range(30):
                assert all(alive(p) for p in pids), "a thread of the gateway ended, not the gateway"
                time.sleep(0.05)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(5)
        assert asyncio.run(gone(pids))
    finally:
        parent.kill()
        parent.wait(5)


# -- configuration and results ---------------------------------------------------------------------


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="either command"):
        McpServerConfig(command="x", url="http://127.0.0.1/mcp")
    with pytest.raises(ValueError, match="either command"):
        McpServerConfig()
    with pytest.raises(ValueError, match="http"):
        McpServerConfig(url="ftp://example.com")
    with pytest.raises(ValueError, match="server name 'a.b'"):
        McpConfig.model_validate({"servers": {"a.b": {"command": "x"}}})
    config = McpServerConfig(url="https://user:pw@example.com/mcp", headers={"A": "${X}", "B": "${Y:-dflt}", "C": "c"})
    assert config.target() == "https://example.com/mcp"
    assert server_headers(config, "s", {"X": "x"}) == {"A": "x", "B": "dflt", "C": "c"}
    with pytest.raises(McpConfigError, match=r"mcp.servers.s.headers.A: \$\{X\} is not set"):
        server_headers(config, "s", {})


def test_results_for_the_model() -> None:
    text = types.TextContent(type="text", text="done")
    image = types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png")
    blob = types.EmbeddedResource(
        type="resource", resource=types.BlobResourceContents(uri="file:///x.bin", blob="AAAA", mime_type="x/y")
    )
    assert convert_result(types.CallToolResult(content=[text]), "t") == "done"
    structured = types.CallToolResult(content=[text], structured_content={"n": 1})
    assert convert_result(structured, "t") == {"n": 1}
    mixed = types.CallToolResult(content=[text, image, blob], structured_content={"n": 1})
    assert convert_result(mixed, "t") == {
        "result": {"n": 1},
        "attachments": ["[image: image/png, 5 bytes]", "[resource <file:///x.bin>, x/y, 3 bytes]"],
    }
    with pytest.raises(ToolError, match="bad input"):
        convert_result(
            types.CallToolResult(content=[types.TextContent(type="text", text="bad input")], is_error=True), "t"
        )
    with pytest.raises(ToolError, match="t failed"):
        convert_result(types.CallToolResult(content=[], is_error=True), "t")
