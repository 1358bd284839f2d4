"""A tools' workspace that holds the bot's own files (its data dir, database, configuration, ``.env``, agent
folders) is refused: ``bot doctor`` says ✗ with the fix and ``bot run`` exits naming it.  ``send_file`` sends no
hard link (the same file as one outside the workspace) and none of the bot's own files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.models.scripted import ScriptedModel, call
from bot.cli.doctor import diagnose
from bot.config.own import WORKSPACE_FIX, workspace_problem
from bot.config.settings import ConfigError, load_settings
from bot.gateway.app import Gateway
from tests.conftest import Harness, RecordingChannel

SECRET = "TELEGRAM_BOT_TOKEN=123456:AAH-guard-secret"


def project(tmp_path: Path, **tools: Any) -> Path:
    """``bot init``'s layout: config/bot.yaml, .env, data/ (with a database); the file's ``tools`` section."""
    root = tmp_path / "project"
    (root / "config").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "bot.db").write_bytes(b"")
    (root / ".env").write_text(SECRET + "\n")
    config = root / "config" / "bot.yaml"
    config.write_text(yaml.safe_dump({"agents": {"dirs": []}, "tools": tools} if tools else {"agents": {"dirs": []}}))
    return config


def settings_of(config: Path, tmp_path: Path, **overrides: Any) -> Any:
    return load_settings(config, env={}, user_config=tmp_path / "no-user.yaml", overrides=overrides or None)


async def test_doctor_flags_a_workspace_that_holds_the_project(tmp_path: Path) -> None:
    config = project(tmp_path, workspace=".")
    root = config.parent.parent
    lines = await diagnose(config, timeout_s=5, env={})
    [line] = [line for line in lines if line.what.startswith("workspace")]
    assert not line.ok and line.fix == WORKSPACE_FIX
    for held in ("data (store.data_dir", "config (the project configuration", ".env (a .env file the settings read"):
        assert f" {held}" in line.what, line.what
    assert "bot.db" not in line.what, "what is inside the data dir is not named again"
    assert line.what.startswith(f"workspace: tools.workspace {root} holds the bot's own files")

    good = project(tmp_path / "good")
    lines = await diagnose(good, timeout_s=5, env={})
    [line] = [line for line in lines if line.what.startswith("workspace")]
    assert line.ok and line.what.startswith(f"workspace: {good.parent.parent / 'data' / 'workspace'} ")


@pytest.mark.parametrize(
    "where",
    ["data", "project", "parent-of-database", "working-directory", "agents"],
)
def test_each_way_a_workspace_can_hold_the_bots_files_is_refused(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project(tmp_path)
    root = config.parent.parent
    overrides: dict[str, Any] = {}
    if where == "data":
        overrides["tools"] = {"workspace": str(root / "data")}
    elif where == "project":
        overrides["tools"] = {"workspace": str(root)}
    elif where == "parent-of-database":  # the database elsewhere than the data dir
        (tmp_path / "db").mkdir()
        overrides["store"] = {"url": f"sqlite:///{tmp_path / 'db' / 'live.db'}"}
        overrides["tools"] = {"workspace": str(tmp_path / "db")}
    elif where == "working-directory":  # its .env (and config/) would be read at the next start
        work = tmp_path / "work"
        (work / "here").mkdir(parents=True)
        monkeypatch.chdir(work / "here")
        overrides["tools"] = {"workspace": str(work)}
    else:
        (tmp_path / "agents").mkdir()
        overrides["agents"] = {"dirs": [str(tmp_path / "agents")]}
        overrides["tools"] = {"workspace": str(tmp_path)}
    settings = settings_of(config, tmp_path, **overrides)
    assert workspace_problem(settings) is not None
    with pytest.raises(ConfigError, match="holds the bot's own files.*set tools.workspace to a folder"):
        Gateway(settings)


def test_a_workspace_inside_the_data_dir_is_fine(tmp_path: Path) -> None:
    config = project(tmp_path)
    settings = settings_of(config, tmp_path)
    assert Path(settings.tools.workspace) == config.parent.parent / "data" / "workspace"
    assert workspace_problem(settings) is None
    settings = settings_of(config, tmp_path, tools={"workspace": str(config.parent.parent / "data" / "media" / "x")})
    assert workspace_problem(settings) is None


def test_bot_run_refuses_to_start_naming_the_fix(tmp_path: Path) -> None:
    config = project(tmp_path, workspace=".")
    root = config.parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_", "OPENAI_"))}
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "bot", "run"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"config error: tools.workspace {root} holds the bot's own files" in done.stderr
    assert WORKSPACE_FIX in done.stderr and SECRET not in done.stderr + done.stdout
    assert (root / ".env").read_text() == SECRET + "\n"


async def test_send_file_sends_no_hard_link(make_harness: Any, tmp_path: Path) -> None:
    outside = tmp_path / "live.db"
    outside.write_text("the live database " + SECRET)
    model = ScriptedModel([call("send_file", {"path": "report.db"}), "Could not."])
    h = await make_harness(model)
    workspace = Path(h.gateway.settings.tools.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    os.link(outside, workspace / "report.db")
    await h.say("@react send the report")
    await h.click("Approve")  # sending a file out is confirmed first
    result = model.requests[1].messages[-1].tool_results[0]
    assert "cannot send 'report.db': it has 2 hard links" in str(result.content), result
    assert not [m for m in h.channel.sent if m.file is not None], "nothing was uploaded"
    media = Path(h.gateway.settings.store.data_dir) / "media"
    assert not media.exists() or not any(p.name.startswith("out-") for p in media.iterdir()), "and no copy was left"


async def test_send_file_refuses_the_bots_own_files(make_settings: Any, tmp_path: Path) -> None:
    # tools=[]: no built-in tools, so the gateway starts with the data dir's parent as its workspace (the built-in
    # tools would refuse it); send_file still refuses the bot's files in it.
    model = ScriptedModel([call("send_file", {"path": "data/bot.db"}), "Could not."])
    settings = make_settings(tools={"workspace": str(tmp_path)}, channels={"console": {"enabled": True}})
    channel = RecordingChannel("console")
    gateway = Gateway(settings, model=model, channels=[channel], tools=[])
    await gateway.start()
    try:
        h = Harness(gateway, channel)
        await h.say("@react send the database")
        await h.click("Approve")
    finally:
        await gateway.stop(timeout=5)
    result = model.requests[1].messages[-1].tool_results[0]
    assert "'data/bot.db' is one of the bot's own files" in str(result.content), result
    assert not [m for m in channel.sent if m.file is not None]
